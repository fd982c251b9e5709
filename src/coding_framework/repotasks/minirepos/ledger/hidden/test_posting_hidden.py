import pytest
from ledger.posting import can_post, make_txn, post, post_all, transfer


def test_make_txn_default_memo_is_empty():
    assert make_txn("a", 12.5) == {"account": "a", "amount": 12.5, "memo": ""}


def test_make_txn_rounds_to_cents():
    assert make_txn("a", -3.456, "x") == {"account": "a", "amount": -3.46, "memo": "x"}


def test_make_txn_zero_raises():
    with pytest.raises(ValueError):
        make_txn("a", 0)


def test_make_txn_below_a_cent_raises():
    with pytest.raises(ValueError):
        make_txn("a", 0.004)


def test_can_post_credit():
    assert can_post({"a": {"balance": 0.0, "limit": 0.0}}, "a", 10.0) is True


def test_can_post_debit_within_balance_and_limit():
    assert can_post({"a": {"balance": 10.0, "limit": 5.0}}, "a", -15.0) is True
    assert can_post({"a": {"balance": 10.0, "limit": 5.0}}, "a", -15.01) is False


def test_can_post_debit_without_limit():
    assert can_post({"a": {"balance": 10.0, "limit": 0.0}}, "a", -10.0) is True
    assert can_post({"a": {"balance": 10.0, "limit": 0.0}}, "a", -11.0) is False


def test_can_post_nothing_beyond_the_limit():
    assert can_post({"a": {"balance": -8.0, "limit": 5.0}}, "a", 0) is False


def test_post_credit():
    accounts = {"a": {"balance": 10.0, "limit": 0.0}, "b": {"balance": 1.0, "limit": 0.0}}
    posted = post(accounts, {"account": "a", "amount": 2.5, "memo": ""})
    assert posted == {"a": {"balance": 12.5, "limit": 0.0}, "b": {"balance": 1.0, "limit": 0.0}}


def test_post_debit_into_the_overdraft():
    posted = post({"a": {"balance": 10.0, "limit": 20.0}}, {"account": "a", "amount": -25.0, "memo": ""})
    assert posted == {"a": {"balance": -15.0, "limit": 20.0}}


def test_post_leaves_the_input_alone():
    accounts = {"a": {"balance": 10.0, "limit": 0.0}}
    post(accounts, {"account": "a", "amount": -5.0, "memo": ""})
    assert accounts == {"a": {"balance": 10.0, "limit": 0.0}}


def test_post_beyond_the_limit_raises():
    with pytest.raises(ValueError):
        post({"a": {"balance": 10.0, "limit": 20.0}}, {"account": "a", "amount": -30.01, "memo": ""})


def test_post_unknown_account_raises():
    with pytest.raises(ValueError):
        post({}, {"account": "a", "amount": 5.0, "memo": ""})


def test_post_all_in_order():
    accounts = {"a": {"balance": 0.0, "limit": 0.0}}
    txns = [make_txn("a", 20.0), make_txn("a", -15.0), make_txn("a", 0.1)]
    assert post_all(accounts, txns) == {"a": {"balance": 5.1, "limit": 0.0}}


def test_post_all_order_matters_for_the_limit():
    accounts = {"a": {"balance": 0.0, "limit": 0.0}}
    with pytest.raises(ValueError):
        post_all(accounts, [make_txn("a", -15.0), make_txn("a", 20.0)])


def test_post_all_nothing():
    assert post_all({"a": {"balance": 3.0, "limit": 0.0}}, []) == {"a": {"balance": 3.0, "limit": 0.0}}


def test_transfer_moves_money():
    accounts = {"a": {"balance": 100.0, "limit": 0.0}, "b": {"balance": 5.0, "limit": 0.0}}
    moved = transfer(accounts, "a", "b", 40.25)
    assert moved == {"a": {"balance": 59.75, "limit": 0.0}, "b": {"balance": 45.25, "limit": 0.0}}


def test_transfer_uses_the_overdraft():
    accounts = {"a": {"balance": 10.0, "limit": 30.0}, "b": {"balance": 0.0, "limit": 0.0}}
    assert transfer(accounts, "a", "b", 40.0)["a"]["balance"] == -30.0


def test_transfer_beyond_the_limit_raises():
    accounts = {"a": {"balance": 10.0, "limit": 30.0}, "b": {"balance": 0.0, "limit": 0.0}}
    with pytest.raises(ValueError):
        transfer(accounts, "a", "b", 40.01)


def test_transfer_negative_amount_raises():
    accounts = {"a": {"balance": 10.0, "limit": 0.0}, "b": {"balance": 50.0, "limit": 0.0}}
    with pytest.raises(ValueError):
        transfer(accounts, "a", "b", -5.0)


def test_transfer_to_itself_raises():
    with pytest.raises(ValueError):
        transfer({"a": {"balance": 10.0, "limit": 0.0}}, "a", "a", 5.0)


def test_transfer_to_unknown_account_raises():
    with pytest.raises(ValueError):
        transfer({"a": {"balance": 10.0, "limit": 0.0}}, "a", "b", 5.0)


def test_can_post_credit_beyond_the_limit():
    assert can_post({"a": {"balance": -8.0, "limit": 5.0}}, "a", 2.0) is True
    assert can_post({"a": {"balance": -8.0, "limit": 5.0}}, "a", 0.5) is True


def test_transfer_small_amounts():
    accounts = {"a": {"balance": 10.0, "limit": 0.0}, "b": {"balance": 50.0, "limit": 0.0}}
    assert transfer(accounts, "a", "b", 0.5)["b"]["balance"] == 50.5
    with pytest.raises(ValueError):
        transfer(accounts, "a", "b", -0.5)
