"""The Gregorian calendar: leap years, month lengths and valid dates."""

MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def is_leap(year: int) -> bool:
    """Whether `year` has a 29 February: every 4th year, except centuries not divisible by 400."""
    if year % 400 == 0:
        return True
    if year % 100 == 0:
        return False
    return year % 4 == 0


def days_in_month(year: int, month: int) -> int:
    """The number of days in `month` (1 to 12) of `year`."""
    if month < 1 or month > 12:
        raise ValueError(f"no month {month}")
    if month == 2 and is_leap(year):
        return 29
    return MONTH_DAYS[month - 1]


def days_in_year(year: int) -> int:
    """365, or 366 in a leap year."""
    if is_leap(year):
        return 366
    return 365


def validate(year: int, month: int, day: int) -> tuple[int, int, int]:
    """The date as a tuple when it exists (years from 1 on), else ValueError."""
    if year < 1:
        raise ValueError(f"no year {year}")
    if day < 1 or day > days_in_month(year, month):
        raise ValueError(f"no day {day} in {year}-{month}")
    return (year, month, day)


def day_of_year(year: int, month: int, day: int) -> int:
    """The day's number within its year, 1 for 1 January."""
    validate(year, month, day)
    total = day
    for earlier in range(1, month):
        total += days_in_month(year, earlier)
    return total
