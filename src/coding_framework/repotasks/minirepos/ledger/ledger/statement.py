"""Statements and overviews built from accounts and transactions."""

from typing import Any

from ledger.accounts import balance_of
from ledger.posting import post_all

__all__ = ["net_worth", "overdrawn", "running_balances", "statement", "totals"]


def running_balances(opening: float, txns: list[dict[str, Any]]) -> list[float]:
    """The balance after each transaction, starting from ``opening``."""
    balances = []
    current = opening
    for txn in txns:
        current = round(current + txn["amount"], 2)
        balances.append(current)
    return balances


def totals(txns: list[dict[str, Any]]) -> tuple[float, float]:
    """(money in, money out) over ``txns``, both as positive sums."""
    credits = 0.0
    debits = 0.0
    for txn in txns:
        if txn["amount"] > 0:
            credits += txn["amount"]
        else:
            debits -= txn["amount"]
    return round(credits, 2), round(debits, 2)


def statement(accounts: dict[str, dict[str, float]], name: str, txns: list[dict[str, Any]]) -> list[str]:
    """The statement of ``name`` for the transactions of ``txns`` on it: an opening line, one line per
    transaction with the balance after it, and a closing line with the money in and out."""
    own = [txn for txn in txns if txn["account"] == name]
    opening = balance_of(accounts, name)
    closing = balance_of(post_all(accounts, own), name)
    lines = [f"opening {opening:.2f}"]
    balances = running_balances(opening, own)
    for i, txn in enumerate(own):
        lines.append(f"{txn['memo']} {txn['amount']:+.2f} {balances[i]:.2f}")
    money_in, money_out = totals(own)
    lines.append(f"closing {closing:.2f} (in {money_in:.2f}, out {money_out:.2f})")
    return lines


def net_worth(accounts: dict[str, dict[str, float]]) -> float:
    """The sum of all balances."""
    total = 0.0
    for name in accounts:
        total += balance_of(accounts, name)
    return round(total, 2)


def overdrawn(accounts: dict[str, dict[str, float]]) -> list[str]:
    """Names of the accounts with a negative balance, most overdrawn first, ties by name."""
    names = [name for name in accounts if balance_of(accounts, name) < 0]
    return sorted(names, key=lambda name: (balance_of(accounts, name), name))
