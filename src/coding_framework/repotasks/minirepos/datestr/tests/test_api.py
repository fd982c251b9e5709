from datestr.api import age, business_days, describe, diff, shift, shift_months


def test_shift():
    assert shift("2024-01-30", 3) == "2024-02-02"
    assert shift_months("2024-01-15", 1) == "2024-02-15"


def test_diff():
    assert diff("2024-01-01", "2024-01-31") == 30


def test_describe():
    assert describe("2024-03-01") == "Friday 1 March 2024"


def test_business_days_and_age():
    assert business_days("2024-03-04", "2024-03-09") == 5
    assert age("2000-06-15", "2024-07-01") == 24
