from datestr.cal import day_of_year, days_in_month, days_in_year, is_leap, validate


def test_is_leap():
    assert is_leap(2024)
    assert not is_leap(2023)


def test_days_in_month_and_year():
    assert days_in_month(2023, 4) == 30
    assert days_in_year(2023) == 365


def test_validate():
    assert validate(2024, 2, 29) == (2024, 2, 29)


def test_day_of_year():
    assert day_of_year(2023, 2, 1) == 32
