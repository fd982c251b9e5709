from ledger.accounts import account, available, balance_of, close_account, open_account, set_limit


def test_open_and_read_an_account():
    accounts = open_account({}, "alice", 100.0, 50.0)
    assert account(accounts, "alice") == {"balance": 100.0, "limit": 50.0}
    assert balance_of(accounts, "alice") == 100.0
    assert available(accounts, "alice") == 150.0


def test_close_an_empty_account():
    accounts = open_account({}, "bob")
    assert close_account(accounts, "bob") == {}


def test_raise_the_overdraft_limit():
    accounts = set_limit(open_account({}, "alice", 10.0), "alice", 25.0)
    assert available(accounts, "alice") == 35.0
