"""Weekdays, numbered from 0 for Monday to 6 for Sunday."""

from datestr.arith import add_days
from datestr.cal import validate

NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def zeller(year: int, month: int, day: int) -> int:
    """Zeller's congruence for the Gregorian calendar: 0 for Saturday, 1 for Sunday, ... 6 for Friday."""
    if month < 3:
        month += 12
        year -= 1
    k = year % 100
    j = year // 100
    return (day + 13 * (month + 1) // 5 + k + k // 4 + j // 4 + 5 * j) % 7


def weekday(date: tuple[int, int, int]) -> int:
    """The weekday of `date`, 0 for Monday to 6 for Sunday."""
    year, month, day = validate(*date)
    return (zeller(year, month, day) + 5) % 7


def weekday_name(date: tuple[int, int, int], short: bool = False) -> str:
    """The weekday's English name, or its first three letters when `short`."""
    name = NAMES[weekday(date)]
    return name[:3] if short else name


def is_weekend(date: tuple[int, int, int]) -> bool:
    """Whether `date` is a Saturday or a Sunday."""
    day = weekday(date)
    return day >= 5


def next_weekday(date: tuple[int, int, int], target: int) -> tuple[int, int, int]:
    """The first date strictly after `date` that falls on weekday `target` (0 to 6)."""
    if target < 0 or target > 6:
        raise ValueError(f"no weekday {target}")
    ahead = (target - weekday(date)) % 7
    if ahead == 0:
        ahead = 7
    return add_days(date, ahead)
