import pytest
from datestr.api import age, business_days, describe, diff, shift, shift_months


def test_shift_across_leap_day():
    assert shift("2024-02-28", 2) == "2024-03-01"


def test_shift_backwards():
    assert shift("2024-01-01", -1) == "2023-12-31"


def test_shift_zero_and_many():
    assert shift("2024-05-05", 0) == "2024-05-05"
    assert shift("2024-01-01", 1000) == "2026-09-27"


def test_shift_bad_date_raises():
    with pytest.raises(ValueError):
        shift("2023-02-29", 1)


def test_shift_months_clamps():
    assert shift_months("2024-01-31", 1) == "2024-02-29"
    assert shift_months("2024-11-30", 3) == "2025-02-28"


def test_shift_months_backwards():
    assert shift_months("2024-05-15", -5) == "2023-12-15"


def test_diff_forward_and_back():
    assert diff("2023-03-01", "2024-03-01") == 366
    assert diff("2024-03-01", "2023-03-01") == -366


def test_diff_same_day():
    assert diff("2024-03-01", "2024-03-01") == 0


def test_diff_across_century():
    assert diff("1899-12-31", "1900-03-01") == 60


def test_describe_full():
    assert describe("2024-03-01") == "Friday 1 March 2024"
    assert describe("2000-01-01") == "Saturday 1 January 2000"


def test_describe_short():
    assert describe("2024-03-01", True) == "Fri 1 March 2024"


def test_describe_bad_date_raises():
    with pytest.raises(ValueError):
        describe("2024-02-30")


def test_business_days_full_week():
    assert business_days("2024-03-04", "2024-03-11") == 5


def test_business_days_over_weekend():
    assert business_days("2024-03-01", "2024-03-04") == 1


def test_business_days_end_excluded():
    assert business_days("2024-03-04", "2024-03-05") == 1
    assert business_days("2024-03-01", "2024-03-02") == 1


def test_business_days_weekend_only():
    assert business_days("2024-03-02", "2024-03-04") == 0


def test_business_days_empty_or_reversed():
    assert business_days("2024-03-04", "2024-03-04") == 0
    assert business_days("2024-03-11", "2024-03-04") == 0


def test_age_on_birthday():
    assert age("2000-05-10", "2024-05-10") == 24


def test_age_day_before_birthday():
    assert age("2000-05-10", "2024-05-09") == 23


def test_age_later_month():
    assert age("2000-05-10", "2024-06-01") == 24
    assert age("2000-05-10", "2024-04-30") == 23


def test_age_leap_day_birthday():
    assert age("2000-02-29", "2023-02-28") == 22
    assert age("2000-02-29", "2023-03-01") == 23


def test_age_same_day_is_zero():
    assert age("2024-03-01", "2024-03-01") == 0


def test_age_before_birth_raises():
    with pytest.raises(ValueError):
        age("2024-03-01", "2024-02-29")


def test_shift_months_to_shorter_month_and_zero():
    assert shift_months("2024-03-31", 1) == "2024-04-30"
    assert shift_months("2024-03-31", 0) == "2024-03-31"
