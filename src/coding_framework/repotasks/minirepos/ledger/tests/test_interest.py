from ledger.interest import accrue, compound_amount, compound_interest, period_interest, simple_interest


def test_simple_interest():
    assert simple_interest(1000, 5, 2) == 100.0


def test_compound_interest_yearly():
    assert compound_amount(1000, 5, 2) == 1102.5
    assert compound_interest(1000, 5, 2) == 102.5


def test_monthly_interest_on_accounts():
    assert period_interest(1200, 5) == 5.0
    accounts = {"alice": {"balance": 1200.0, "limit": 0.0}}
    assert accrue(accounts, 5) == {"alice": {"balance": 1205.0, "limit": 0.0}}
