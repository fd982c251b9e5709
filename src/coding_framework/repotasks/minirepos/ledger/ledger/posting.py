"""Transactions: ``{"account": name, "amount": signed amount, "memo": text}``; credits are positive."""

from typing import Any

from ledger.accounts import account, available

__all__ = ["can_post", "make_txn", "post", "post_all", "transfer"]


def make_txn(name: str, amount: float, memo: str = "") -> dict[str, Any]:
    """A transaction of ``amount`` (rounded to cents) on account ``name``."""
    amount = round(amount, 2)
    if amount == 0:
        raise ValueError("a transaction needs a non-zero amount")
    return {"account": name, "amount": amount, "memo": memo}


def can_post(accounts: dict[str, dict[str, float]], name: str, amount: float) -> bool:
    """Whether posting ``amount`` to ``name`` keeps it within its overdraft limit."""
    if amount > 0:
        return True
    return available(accounts, name) + amount >= 0


def post(accounts: dict[str, dict[str, float]], txn: dict[str, Any]) -> dict[str, dict[str, float]]:
    """New accounts with ``txn`` posted; ValueError when it would exceed the overdraft limit."""
    name = txn["account"]
    amount = txn["amount"]
    if not can_post(accounts, name, amount):
        raise ValueError(f"posting {amount} to {name} exceeds its overdraft limit")
    record = account(accounts, name)
    updated = dict(accounts)
    updated[name] = {**record, "balance": round(record["balance"] + amount, 2)}
    return updated


def post_all(
    accounts: dict[str, dict[str, float]], txns: list[dict[str, Any]]
) -> dict[str, dict[str, float]]:
    """New accounts with every transaction posted in order; the first that fails raises."""
    updated = accounts
    for txn in txns:
        updated = post(updated, txn)
    return updated


def transfer(
    accounts: dict[str, dict[str, float]], source: str, target: str, amount: float, memo: str = "transfer"
) -> dict[str, dict[str, float]]:
    """New accounts with ``amount`` moved from ``source`` to ``target``."""
    if amount <= 0:
        raise ValueError(f"a transfer needs a positive amount, got {amount}")
    if source == target:
        raise ValueError(f"cannot transfer from {source} to itself")
    debited = post(accounts, make_txn(source, -amount, memo))
    return post(debited, make_txn(target, amount, memo))
