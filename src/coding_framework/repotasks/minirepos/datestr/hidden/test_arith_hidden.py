import pytest
from datestr.arith import add_days, add_months, days_between, from_ordinal, to_ordinal


def test_to_ordinal_first_day():
    assert to_ordinal((1, 1, 1)) == 1
    assert to_ordinal((1, 12, 31)) == 365


def test_to_ordinal_modern():
    assert to_ordinal((2024, 1, 1)) == 738886
    assert to_ordinal((2000, 2, 29)) == 730179


def test_to_ordinal_century():
    assert to_ordinal((1900, 3, 1)) == 693655


def test_to_ordinal_cycle_edge():
    assert to_ordinal((400, 12, 31)) == 146097
    assert to_ordinal((401, 1, 1)) == 146098


def test_from_ordinal_first_day():
    assert from_ordinal(1) == (1, 1, 1)
    assert from_ordinal(365) == (1, 12, 31)


def test_from_ordinal_modern():
    assert from_ordinal(738886) == (2024, 1, 1)
    assert from_ordinal(730179) == (2000, 2, 29)


def test_from_ordinal_cycle_edge():
    assert from_ordinal(146097) == (400, 12, 31)
    assert from_ordinal(146098) == (401, 1, 1)
    assert from_ordinal(292194) == (800, 12, 31)


def test_from_ordinal_leap_day_in_old_century():
    assert from_ordinal(584082) == (1600, 2, 29)


def test_from_ordinal_zero_raises():
    with pytest.raises(ValueError):
        from_ordinal(0)


def test_add_days_across_leap_day():
    assert add_days((2024, 2, 28), 2) == (2024, 3, 1)
    assert add_days((2023, 2, 28), 1) == (2023, 3, 1)


def test_add_days_across_year():
    assert add_days((2024, 12, 31), 1) == (2025, 1, 1)


def test_add_days_backwards_and_zero():
    assert add_days((2024, 3, 1), -1) == (2024, 2, 29)
    assert add_days((2024, 3, 1), 0) == (2024, 3, 1)


def test_add_days_many():
    assert add_days((2024, 1, 1), 1000) == (2026, 9, 27)


def test_days_between_leap_year():
    assert days_between((2023, 3, 1), (2024, 3, 1)) == 366
    assert days_between((2023, 1, 1), (2024, 1, 1)) == 365


def test_days_between_negative():
    assert days_between((2024, 3, 1), (2023, 3, 1)) == -366


def test_days_between_same_day():
    assert days_between((2024, 5, 5), (2024, 5, 5)) == 0


def test_add_months_clamps_to_month_end():
    assert add_months((2024, 1, 31), 1) == (2024, 2, 29)
    assert add_months((2023, 1, 31), 1) == (2023, 2, 28)


def test_add_months_across_year():
    assert add_months((2024, 11, 15), 2) == (2025, 1, 15)
    assert add_months((2024, 1, 15), -1) == (2023, 12, 15)


def test_add_months_zero_in_december():
    assert add_months((2024, 12, 1), 0) == (2024, 12, 1)


def test_add_months_whole_year():
    assert add_months((2024, 2, 29), 12) == (2025, 2, 28)
    assert add_months((2024, 3, 31), -1) == (2024, 2, 29)
