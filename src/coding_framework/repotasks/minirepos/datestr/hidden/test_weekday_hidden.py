import pytest
from datestr.weekday import is_weekend, next_weekday, weekday, weekday_name, zeller


def test_zeller_march():
    assert zeller(2024, 3, 1) == 6
    assert zeller(2100, 3, 1) == 2


def test_zeller_january_counts_as_previous_year():
    assert zeller(2000, 1, 1) == 0
    assert zeller(1900, 1, 1) == 2


def test_zeller_february():
    assert zeller(2023, 2, 5) == 1
    assert zeller(2024, 2, 29) == 5


def test_zeller_december():
    assert zeller(1999, 12, 31) == 6


def test_weekday_monday_and_friday():
    assert weekday((1900, 1, 1)) == 0
    assert weekday((2024, 3, 1)) == 4


def test_weekday_weekend_days():
    assert weekday((2000, 1, 1)) == 5
    assert weekday((2023, 2, 5)) == 6


def test_weekday_leap_day():
    assert weekday((2024, 2, 29)) == 3


def test_weekday_invalid_date_raises():
    with pytest.raises(ValueError):
        weekday((2023, 2, 29))


def test_weekday_name_full_by_default():
    assert weekday_name((2024, 3, 1)) == "Friday"
    assert weekday_name((2023, 2, 5)) == "Sunday"


def test_weekday_name_short():
    assert weekday_name((1900, 1, 1), True) == "Mon"
    assert weekday_name((2000, 1, 1), short=True) == "Sat"


def test_is_weekend_saturday_and_sunday():
    assert is_weekend((2000, 1, 1))
    assert is_weekend((2023, 2, 5))


def test_is_weekend_weekdays():
    assert not is_weekend((2024, 3, 1))
    assert not is_weekend((1900, 1, 1))


def test_next_weekday_later_in_week():
    assert next_weekday((2024, 3, 1), 5) == (2024, 3, 2)
    assert next_weekday((2024, 3, 1), 6) == (2024, 3, 3)


def test_next_weekday_wraps_to_next_week():
    assert next_weekday((2024, 3, 1), 0) == (2024, 3, 4)


def test_next_weekday_same_day_means_a_week_later():
    assert next_weekday((2024, 3, 1), 4) == (2024, 3, 8)


def test_next_weekday_bad_target_raises():
    with pytest.raises(ValueError):
        next_weekday((2024, 3, 1), 7)
    with pytest.raises(ValueError):
        next_weekday((2024, 3, 1), -1)


def test_weekday_name_leap_day():
    assert weekday_name((2024, 2, 29)) == "Thursday"
    assert weekday_name((2024, 2, 29), True) == "Thu"


def test_is_weekend_around_leap_day():
    assert not is_weekend((2024, 2, 29))
    assert is_weekend((2024, 3, 3))
