from ledger.statement import net_worth, overdrawn, running_balances, statement, totals


def test_running_balances_and_totals():
    txns = [{"account": "a", "amount": 10.0, "memo": ""}, {"account": "a", "amount": -4.0, "memo": ""}]
    assert running_balances(100.0, txns) == [110.0, 106.0]
    assert totals(txns) == (10.0, 4.0)


def test_statement_lines():
    accounts = {"a": {"balance": 100.0, "limit": 0.0}}
    txns = [{"account": "a", "amount": -25.5, "memo": "gas"}]
    lines = ["opening 100.00", "gas -25.50 74.50", "closing 74.50 (in 0.00, out 25.50)"]
    assert statement(accounts, "a", txns) == lines


def test_net_worth_and_overdrawn():
    accounts = {"a": {"balance": 100.0, "limit": 0.0}, "b": {"balance": -20.0, "limit": 50.0}}
    assert net_worth(accounts) == 80.0
    assert overdrawn(accounts) == ["b"]
