from ledger.posting import can_post, make_txn, post, post_all, transfer


def test_make_and_post_a_transaction():
    accounts = {"alice": {"balance": 100.0, "limit": 0.0}}
    txn = make_txn("alice", -30.0, "rent")
    assert txn == {"account": "alice", "amount": -30.0, "memo": "rent"}
    assert post(accounts, txn)["alice"]["balance"] == 70.0


def test_post_several():
    accounts = {"alice": {"balance": 0.0, "limit": 0.0}}
    txns = [make_txn("alice", 20.0), make_txn("alice", -5.0)]
    assert post_all(accounts, txns)["alice"]["balance"] == 15.0
    assert can_post(accounts, "alice", 5.0)


def test_transfer_between_accounts():
    accounts = {"alice": {"balance": 100.0, "limit": 0.0}, "bob": {"balance": 0.0, "limit": 0.0}}
    moved = transfer(accounts, "alice", "bob", 40.0)
    assert moved["alice"]["balance"] == 60.0
    assert moved["bob"]["balance"] == 40.0
