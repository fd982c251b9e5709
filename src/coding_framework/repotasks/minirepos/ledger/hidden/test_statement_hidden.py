import pytest
from ledger.statement import net_worth, overdrawn, running_balances, statement, totals


def test_running_balances_from_opening():
    txns = [{"account": "a", "amount": 10.0, "memo": ""}, {"account": "a", "amount": -4.55, "memo": ""}]
    assert running_balances(100.0, txns) == [110.0, 105.45]


def test_running_balances_round_to_cents():
    txns = [{"account": "a", "amount": 0.1, "memo": ""}, {"account": "a", "amount": 0.2, "memo": ""}]
    assert running_balances(0.0, txns) == [0.1, 0.3]


def test_running_balances_no_transactions():
    assert running_balances(5.0, []) == []


def test_totals_in_and_out():
    txns = [
        {"account": "a", "amount": 10.0, "memo": ""},
        {"account": "a", "amount": -4.55, "memo": ""},
        {"account": "b", "amount": -0.5, "memo": ""},
        {"account": "a", "amount": 2.25, "memo": ""},
        {"account": "a", "amount": 0.5, "memo": ""},
    ]
    assert totals(txns) == (12.75, 5.05)


def test_totals_only_debits():
    assert totals([{"account": "a", "amount": -3.0, "memo": ""}]) == (0, 3.0)


def test_totals_empty():
    assert totals([]) == (0, 0)


def test_statement_opening_lines_and_closing():
    accounts = {"a": {"balance": 100.0, "limit": 0.0}}
    txns = [{"account": "a", "amount": 20.0, "memo": "pay"}, {"account": "a", "amount": -45.5, "memo": "gas"}]
    assert statement(accounts, "a", txns) == [
        "opening 100.00",
        "pay +20.00 120.00",
        "gas -45.50 74.50",
        "closing 74.50 (in 20.00, out 45.50)",
    ]


def test_statement_skips_other_accounts():
    accounts = {"a": {"balance": 10.0, "limit": 0.0}, "b": {"balance": 0.0, "limit": 0.0}}
    txns = [{"account": "b", "amount": 5.0, "memo": "x"}, {"account": "a", "amount": -1.0, "memo": "y"}]
    lines = ["opening 10.00", "y -1.00 9.00", "closing 9.00 (in 0.00, out 1.00)"]
    assert statement(accounts, "a", txns) == lines


def test_statement_without_transactions():
    accounts = {"a": {"balance": 7.0, "limit": 0.0}}
    assert statement(accounts, "a", []) == ["opening 7.00", "closing 7.00 (in 0.00, out 0.00)"]


def test_statement_beyond_the_limit_raises():
    accounts = {"a": {"balance": 10.0, "limit": 0.0}}
    with pytest.raises(ValueError):
        statement(accounts, "a", [{"account": "a", "amount": -11.0, "memo": "x"}])


def test_net_worth_sums_balances():
    accounts = {"a": {"balance": 100.0, "limit": 0.0}, "b": {"balance": -20.55, "limit": 50.0}}
    assert net_worth(accounts) == 79.45


def test_net_worth_rounds_to_cents():
    accounts = {"a": {"balance": 0.1, "limit": 0.0}, "b": {"balance": 0.2, "limit": 0.0}}
    assert net_worth(accounts) == 0.3


def test_net_worth_no_accounts():
    assert net_worth({}) == 0


def test_overdrawn_most_overdrawn_first():
    accounts = {
        "a": {"balance": -5.0, "limit": 50.0},
        "b": {"balance": 10.0, "limit": 0.0},
        "c": {"balance": -30.0, "limit": 50.0},
    }
    assert overdrawn(accounts) == ["c", "a"]


def test_overdrawn_ties_by_name_and_zero_is_not_overdrawn():
    accounts = {
        "d": {"balance": -5.0, "limit": 50.0},
        "c": {"balance": -5.0, "limit": 50.0},
        "z": {"balance": 0.0, "limit": 0.0},
    }
    assert overdrawn(accounts) == ["c", "d"]


def test_overdrawn_none():
    assert overdrawn({"a": {"balance": 1.0, "limit": 0.0}}) == []


def test_overdrawn_by_less_than_one():
    assert overdrawn({"a": {"balance": -0.5, "limit": 1.0}}) == ["a"]
