"""Operations on "YYYY-MM-DD" strings."""

from datestr.arith import add_days, add_months, days_between
from datestr.text import format_date, format_long, parse_date
from datestr.weekday import is_weekend, weekday_name


def shift(text: str, days: int) -> str:
    """The date `days` after the date in `text`."""
    date = add_days(parse_date(text), days)
    return format_date(date)


def shift_months(text: str, months: int) -> str:
    """The date `months` after the date in `text`, clamped to the end of a shorter month."""
    date = add_months(parse_date(text), months)
    return format_date(date)


def diff(start: str, end: str) -> int:
    """How many days `end` comes after `start`."""
    first, last = parse_date(start), parse_date(end)
    return days_between(first, last)


def describe(text: str, short: bool = False) -> str:
    """The date with its weekday, as "Friday 1 March 2024" ("Fri 1 March 2024" when `short`)."""
    date = parse_date(text)
    return f"{weekday_name(date, short)} {format_long(date)}"


def business_days(start: str, end: str) -> int:
    """The number of Mondays to Fridays from `start` up to, not including, `end` (0 unless `end` is later)."""
    current, last = parse_date(start), parse_date(end)
    count = 0
    while days_between(current, last) > 0:
        if not is_weekend(current):
            count += 1
        current = add_days(current, 1)
    return count


def age(birth: str, on: str) -> int:
    """Full years from `birth` to `on`; a 29 February birthday counts from 1 March in other years."""
    born, today = parse_date(birth), parse_date(on)
    years = today[0] - born[0]
    if (today[1], today[2]) < (born[1], born[2]):
        years -= 1
    if years < 0:
        raise ValueError("`on` is before `birth`")
    return years
