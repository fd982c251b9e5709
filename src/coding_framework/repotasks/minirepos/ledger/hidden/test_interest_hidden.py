import pytest
from ledger.interest import accrue, compound_amount, compound_interest, period_interest, simple_interest


def test_simple_interest_over_years():
    assert simple_interest(1000, 5, 2) == 100


def test_simple_interest_rounds_to_cents():
    assert simple_interest(333, 1.5, 1) == 5.0
    assert simple_interest(123.45, 4, 1) == 4.94


def test_simple_interest_zero_inputs():
    assert simple_interest(0, 5, 2) == 0
    assert simple_interest(1000, 0, 2) == 0
    assert simple_interest(1000, 5, 0) == 0


def test_simple_interest_negative_raises():
    with pytest.raises(ValueError):
        simple_interest(-0.5, 5, 2)
    with pytest.raises(ValueError):
        simple_interest(1000, -0.5, 2)
    with pytest.raises(ValueError):
        simple_interest(1000, 5, -0.5)


def test_compound_amount_yearly_by_default():
    assert compound_amount(1000, 5, 2) == 1102.5


def test_compound_amount_monthly():
    assert compound_amount(1000, 5, 2, 12) == 1104.94


def test_compound_amount_quarterly():
    assert compound_amount(1000, 6, 1, 4) == 1061.36


def test_compound_amount_zero_years():
    assert compound_amount(1000, 5, 0) == 1000


def test_compound_amount_no_periods_raises():
    with pytest.raises(ValueError):
        compound_amount(1000, 5, 2, 0)


def test_compound_amount_negative_years_raises():
    with pytest.raises(ValueError):
        compound_amount(1000, 5, -1)


def test_compound_interest_yearly_by_default():
    assert compound_interest(1000, 5, 2) == 102.5


def test_compound_interest_monthly():
    assert compound_interest(1000, 5, 2, 12) == 104.94


def test_compound_interest_three_years():
    assert compound_interest(250, 4, 3) == 31.22


def test_period_interest_monthly_by_default():
    assert period_interest(1200, 5) == 5


def test_period_interest_given_periods():
    assert period_interest(1000, 3, 4) == 7.5
    assert period_interest(1000, 3, 1) == 30
    assert period_interest(150, 3, 1) == 4.5


def test_period_interest_rounds_to_cents():
    assert period_interest(1000, 3) == 2.5
    assert period_interest(100, 1) == 0.08


def test_period_interest_on_an_overdraft():
    assert period_interest(-500, 18) == -7.5


def test_period_interest_invalid_raises():
    with pytest.raises(ValueError):
        period_interest(1000, 3, 0)
    with pytest.raises(ValueError):
        period_interest(1000, -0.5)


def test_accrue_credits_positive_balances_monthly():
    accounts = {"a": {"balance": 1200.0, "limit": 0.0}}
    assert accrue(accounts, 5) == {"a": {"balance": 1205.0, "limit": 0.0}}


def test_accrue_no_overdraft_charge_by_default():
    accounts = {"a": {"balance": -500.0, "limit": 1000.0}}
    assert accrue(accounts, 5) == {"a": {"balance": -500.0, "limit": 1000.0}}


def test_accrue_charges_overdrafts():
    accounts = {"a": {"balance": -500.0, "limit": 1000.0}, "b": {"balance": 1000.0, "limit": 0.0}}
    assert accrue(accounts, 3, 18) == {
        "a": {"balance": -507.5, "limit": 1000.0},
        "b": {"balance": 1002.5, "limit": 0.0},
    }


def test_accrue_given_periods():
    accounts = {"a": {"balance": 1000.0, "limit": 0.0}, "z": {"balance": 0.0, "limit": 0.0}}
    assert accrue(accounts, 4, 0.0, 4) == {
        "a": {"balance": 1010.0, "limit": 0.0},
        "z": {"balance": 0.0, "limit": 0.0},
    }


def test_accrue_small_balances_either_side_of_zero():
    accounts = {"a": {"balance": 0.9, "limit": 0.0}, "b": {"balance": -0.5, "limit": 1.0}}
    accrued = accrue(accounts, 100, 200, 1)
    assert accrued == {"a": {"balance": 1.8, "limit": 0.0}, "b": {"balance": -1.5, "limit": 1.0}}


def test_accrue_rounds_to_cents():
    accounts = {"a": {"balance": 100.25, "limit": 0.0}}
    assert accrue(accounts, 12) == {"a": {"balance": 101.25, "limit": 0.0}}
