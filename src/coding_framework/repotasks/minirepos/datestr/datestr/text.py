"""Dates as text: "YYYY-MM-DD" and month names."""

from datestr.cal import validate

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December")


def parse_date(text: str) -> tuple[int, int, int]:
    """The date in "YYYY-MM-DD" (surrounding spaces allowed), checked to exist."""
    parts = text.strip().split("-")
    if [len(part) for part in parts] != [4, 2, 2]:
        raise ValueError(f"not a YYYY-MM-DD date: {text!r}")
    if not all(part.isdigit() for part in parts):
        raise ValueError(f"not a YYYY-MM-DD date: {text!r}")
    return validate(int(parts[0]), int(parts[1]), int(parts[2]))


def format_date(date: tuple[int, int, int], sep: str = "-") -> str:
    """`date` as "YYYY-MM-DD", or with another separator."""
    year, month, day = date
    return f"{year:04d}{sep}{month:02d}{sep}{day:02d}"


def month_name(month: int, short: bool = False) -> str:
    """The English name of `month` (1 to 12), or its first three letters when `short`."""
    if month < 1 or month > 12:
        raise ValueError(f"no month {month}")
    name = MONTHS[month - 1]
    return name[:3] if short else name


def format_long(date: tuple[int, int, int]) -> str:
    """`date` as "1 March 2024"."""
    year, month, day = validate(*date)
    return f"{day} {month_name(month)} {year}"
