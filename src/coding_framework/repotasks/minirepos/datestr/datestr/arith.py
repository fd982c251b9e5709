"""Date arithmetic through day numbers: 0001-01-01 is day 1."""

from datestr.cal import day_of_year, days_in_month, days_in_year

DAYS_PER_400_YEARS = 146097


def to_ordinal(date: tuple[int, int, int]) -> int:
    """The day number of `date`, counting 0001-01-01 as day 1."""
    year, month, day = date
    before = year - 1
    return before * 365 + before // 4 - before // 100 + before // 400 + day_of_year(year, month, day)


def from_ordinal(n: int) -> tuple[int, int, int]:
    """The date whose day number is `n` (at least 1)."""
    if n < 1:
        raise ValueError("day numbers start at 1")
    cycles, remaining = divmod(n - 1, DAYS_PER_400_YEARS)
    year = cycles * 400 + 1
    remaining += 1
    while remaining > days_in_year(year):
        remaining -= days_in_year(year)
        year += 1
    month = 1
    while remaining > days_in_month(year, month):
        remaining -= days_in_month(year, month)
        month += 1
    return (year, month, remaining)


def add_days(date: tuple[int, int, int], days: int) -> tuple[int, int, int]:
    """The date `days` after `date` (before it when negative)."""
    n = to_ordinal(date) + days
    return from_ordinal(n)


def days_between(start: tuple[int, int, int], end: tuple[int, int, int]) -> int:
    """How many days `end` comes after `start` (negative when before)."""
    first, last = to_ordinal(start), to_ordinal(end)
    return last - first


def add_months(date: tuple[int, int, int], months: int) -> tuple[int, int, int]:
    """The same day `months` later, moved back to the month's last day when that month is shorter."""
    year, month, day = date
    index = year * 12 + month - 1 + months
    new_year, new_month = index // 12, index % 12 + 1
    return (new_year, new_month, min(day, days_in_month(new_year, new_month)))
