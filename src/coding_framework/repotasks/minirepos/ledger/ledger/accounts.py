"""Accounts: a dict mapping account name to ``{"balance": float, "limit": float}``.

``limit`` is the overdraft allowed, so the balance may go down to ``-limit``. Amounts are rounded to cents.
"""

__all__ = ["account", "available", "balance_of", "close_account", "open_account", "set_limit"]


def open_account(
    accounts: dict[str, dict[str, float]], name: str, balance: float = 0.0, limit: float = 0.0
) -> dict[str, dict[str, float]]:
    """New accounts with ``name`` opened at ``balance`` with an overdraft ``limit``."""
    if name in accounts:
        raise ValueError(f"account {name} already exists")
    if limit < 0:
        raise ValueError(f"the overdraft limit must not be negative, got {limit}")
    if balance < -limit:
        raise ValueError(f"an opening balance of {balance} is beyond the overdraft limit {limit}")
    updated = dict(accounts)
    updated[name] = {"balance": round(balance, 2), "limit": round(limit, 2)}
    return updated


def account(accounts: dict[str, dict[str, float]], name: str) -> dict[str, float]:
    """The record of account ``name``; ValueError for an unknown account."""
    if name not in accounts:
        raise ValueError(f"unknown account {name}")
    return accounts[name]


def balance_of(accounts: dict[str, dict[str, float]], name: str) -> float:
    """The balance of account ``name``."""
    record = account(accounts, name)
    return record["balance"]


def available(accounts: dict[str, dict[str, float]], name: str) -> float:
    """What account ``name`` can still pay out: its balance plus its overdraft limit."""
    record = account(accounts, name)
    return round(record["balance"] + record["limit"], 2)


def close_account(accounts: dict[str, dict[str, float]], name: str) -> dict[str, dict[str, float]]:
    """New accounts without ``name``; only an account with a zero balance can be closed."""
    if balance_of(accounts, name) != 0:
        raise ValueError(f"account {name} still holds {balance_of(accounts, name)}")
    updated = dict(accounts)
    del updated[name]
    return updated


def set_limit(accounts: dict[str, dict[str, float]], name: str, limit: float) -> dict[str, dict[str, float]]:
    """New accounts with the overdraft limit of ``name`` changed to ``limit``."""
    if limit < 0:
        raise ValueError(f"the overdraft limit must not be negative, got {limit}")
    if balance_of(accounts, name) < -limit:
        raise ValueError(f"account {name} is already overdrawn beyond {limit}")
    updated = dict(accounts)
    updated[name] = {**account(accounts, name), "limit": round(limit, 2)}
    return updated
