import pytest
from datestr.cal import day_of_year, days_in_month, days_in_year, is_leap, validate


def test_is_leap_every_fourth_year():
    assert is_leap(2024)
    assert is_leap(4)


def test_is_leap_ordinary_years():
    assert not is_leap(2023)
    assert not is_leap(1)


def test_is_leap_centuries():
    assert not is_leap(1900)
    assert not is_leap(2100)


def test_is_leap_four_centuries():
    assert is_leap(2000)
    assert is_leap(1600)


def test_days_in_month_long_and_short():
    assert days_in_month(2023, 1) == 31
    assert days_in_month(2023, 4) == 30
    assert days_in_month(2023, 12) == 31


def test_days_in_month_february():
    assert days_in_month(2023, 2) == 28
    assert days_in_month(2024, 2) == 29
    assert days_in_month(1900, 2) == 28


def test_days_in_month_other_months_of_leap_year():
    assert days_in_month(2024, 3) == 31
    assert days_in_month(2024, 11) == 30


def test_days_in_month_bad_month_raises():
    with pytest.raises(ValueError):
        days_in_month(2024, 0)
    with pytest.raises(ValueError):
        days_in_month(2024, 13)


def test_days_in_year_values():
    assert days_in_year(2024) == 366
    assert days_in_year(2023) == 365


def test_days_in_year_centuries():
    assert days_in_year(1900) == 365
    assert days_in_year(2000) == 366


def test_validate_returns_tuple():
    assert validate(1, 1, 1) == (1, 1, 1)
    assert validate(2023, 4, 30) == (2023, 4, 30)


def test_validate_year_zero_raises():
    with pytest.raises(ValueError):
        validate(0, 1, 1)


def test_validate_day_out_of_range_raises():
    with pytest.raises(ValueError):
        validate(2023, 1, 0)
    with pytest.raises(ValueError):
        validate(2023, 4, 31)


def test_validate_leap_day():
    assert validate(2024, 2, 29) == (2024, 2, 29)
    with pytest.raises(ValueError):
        validate(2023, 2, 29)


def test_validate_bad_month_raises():
    with pytest.raises(ValueError):
        validate(2023, 13, 1)


def test_day_of_year_first_day():
    assert day_of_year(2023, 1, 1) == 1


def test_day_of_year_last_day():
    assert day_of_year(2023, 12, 31) == 365
    assert day_of_year(2024, 12, 31) == 366


def test_day_of_year_after_february():
    assert day_of_year(2023, 3, 1) == 60
    assert day_of_year(2024, 3, 1) == 61


def test_day_of_year_invalid_raises():
    with pytest.raises(ValueError):
        day_of_year(2023, 2, 30)


def test_days_in_year_old_years():
    assert days_in_year(1600) == 366
    assert days_in_year(1) == 365
