import pytest
from ledger.accounts import account, available, balance_of, close_account, open_account, set_limit


def test_open_account_defaults_to_zero_balance_and_no_overdraft():
    assert open_account({}, "a") == {"a": {"balance": 0.0, "limit": 0.0}}


def test_open_account_keeps_the_others():
    accounts = {"a": {"balance": 5.0, "limit": 0.0}}
    opened = open_account(accounts, "b", 7.0)
    assert opened == {"a": {"balance": 5.0, "limit": 0.0}, "b": {"balance": 7.0, "limit": 0.0}}
    assert accounts == {"a": {"balance": 5.0, "limit": 0.0}}


def test_open_account_rounds_to_cents():
    assert open_account({}, "a", 1.239, 2.25) == {"a": {"balance": 1.24, "limit": 2.25}}


def test_open_account_overdrawn_up_to_the_limit():
    assert open_account({}, "a", -50.0, 50.0) == {"a": {"balance": -50.0, "limit": 50.0}}


def test_open_account_beyond_the_limit_raises():
    with pytest.raises(ValueError):
        open_account({}, "a", -50.01, 50.0)
    with pytest.raises(ValueError):
        open_account({}, "a", -1.0)


def test_open_account_twice_raises():
    with pytest.raises(ValueError):
        open_account({"a": {"balance": 0.0, "limit": 0.0}}, "a")


def test_open_account_negative_limit_raises():
    with pytest.raises(ValueError):
        open_account({}, "a", 10.0, -1.0)


def test_account_record():
    accounts = {"a": {"balance": 5.0, "limit": 1.0}, "b": {"balance": 2.0, "limit": 0.0}}
    assert account(accounts, "b") == {"balance": 2.0, "limit": 0.0}


def test_account_unknown_raises():
    with pytest.raises(ValueError):
        account({"a": {"balance": 5.0, "limit": 1.0}}, "b")


def test_balance_of_account():
    assert balance_of({"a": {"balance": -3.5, "limit": 10.0}}, "a") == -3.5


def test_balance_of_unknown_raises():
    with pytest.raises(ValueError):
        balance_of({}, "a")


def test_available_adds_the_limit():
    assert available({"a": {"balance": 20.0, "limit": 30.5}}, "a") == 50.5


def test_available_when_overdrawn():
    assert available({"a": {"balance": -20.0, "limit": 30.0}}, "a") == 10.0


def test_available_without_limit():
    assert available({"a": {"balance": 12.25, "limit": 0.0}}, "a") == 12.25


def test_close_account_with_zero_balance():
    accounts = {"a": {"balance": 0.0, "limit": 9.0}, "b": {"balance": 1.0, "limit": 0.0}}
    assert close_account(accounts, "a") == {"b": {"balance": 1.0, "limit": 0.0}}
    assert "a" in accounts


def test_close_account_with_money_raises():
    with pytest.raises(ValueError):
        close_account({"a": {"balance": 1.0, "limit": 0.0}}, "a")


def test_close_account_overdrawn_raises():
    with pytest.raises(ValueError):
        close_account({"a": {"balance": -1.0, "limit": 5.0}}, "a")


def test_close_account_unknown_raises():
    with pytest.raises(ValueError):
        close_account({}, "a")


def test_set_limit_changes_only_the_limit():
    accounts = {"a": {"balance": 10.0, "limit": 0.0}}
    assert set_limit(accounts, "a", 25.556) == {"a": {"balance": 10.0, "limit": 25.56}}
    assert accounts == {"a": {"balance": 10.0, "limit": 0.0}}


def test_set_limit_to_zero():
    assert set_limit({"a": {"balance": 10.0, "limit": 5.0}}, "a", 0) == {"a": {"balance": 10.0, "limit": 0}}


def test_set_limit_exactly_covering_the_overdraft():
    assert set_limit({"a": {"balance": -10.0, "limit": 20.0}}, "a", 10.0)["a"]["limit"] == 10.0


def test_set_limit_below_the_overdraft_raises():
    with pytest.raises(ValueError):
        set_limit({"a": {"balance": -10.0, "limit": 20.0}}, "a", 9.99)


def test_set_limit_negative_raises():
    with pytest.raises(ValueError):
        set_limit({"a": {"balance": 10.0, "limit": 20.0}}, "a", -1)


def test_open_account_limit_rounds_to_cents():
    assert open_account({}, "a", 0.0, 2.257) == {"a": {"balance": 0.0, "limit": 2.26}}


def test_account_record_after_opening():
    assert account(open_account({}, "a", 3.0, 1.0), "a") == {"balance": 3.0, "limit": 1.0}


def test_balance_of_each_account():
    accounts = {"a": {"balance": 4.0, "limit": 0.0}, "b": {"balance": 9.25, "limit": 2.0}}
    assert balance_of(accounts, "a") == 4.0
    assert balance_of(accounts, "b") == 9.25
