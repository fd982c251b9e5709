from datestr.arith import add_days, add_months, days_between, from_ordinal, to_ordinal


def test_ordinals():
    assert to_ordinal((1, 1, 1)) == 1
    assert from_ordinal(1) == (1, 1, 1)


def test_add_days():
    assert add_days((2023, 12, 31), 1) == (2024, 1, 1)


def test_days_between():
    assert days_between((2023, 1, 1), (2023, 1, 31)) == 30


def test_add_months():
    assert add_months((2023, 5, 15), 2) == (2023, 7, 15)
