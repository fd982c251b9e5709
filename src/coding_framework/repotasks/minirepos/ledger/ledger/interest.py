"""Interest, with rates as annual percentages and results rounded to cents."""

from ledger.accounts import balance_of

__all__ = ["accrue", "compound_amount", "compound_interest", "period_interest", "simple_interest"]


def simple_interest(principal: float, rate: float, years: float) -> float:
    """Simple interest on ``principal`` at ``rate`` percent a year for ``years`` years."""
    if principal < 0 or rate < 0 or years < 0:
        raise ValueError("principal, rate and years must not be negative")
    return round(principal * rate * years / 100, 2)


def compound_amount(principal: float, rate: float, years: int, periods: int = 1) -> float:
    """What ``principal`` grows to at ``rate`` percent a year compounded ``periods`` times a year."""
    if periods < 1:
        raise ValueError(f"need at least one compounding period a year, got {periods}")
    if years < 0:
        raise ValueError(f"years must not be negative, got {years}")
    return round(principal * (1 + rate / 100 / periods) ** (periods * years), 2)


def compound_interest(principal: float, rate: float, years: int, periods: int = 1) -> float:
    """The interest earned by ``principal`` compounded as in ``compound_amount``."""
    amount = compound_amount(principal, rate, years, periods)
    return round(amount - principal, 2)


def period_interest(balance: float, rate: float, periods: int = 12) -> float:
    """Interest on ``balance`` for one of ``periods`` periods of a year at ``rate`` percent a year."""
    if periods < 1:
        raise ValueError(f"need at least one period a year, got {periods}")
    if rate < 0:
        raise ValueError(f"the rate must not be negative, got {rate}")
    return round(balance * rate / 100 / periods, 2)


def accrue(
    accounts: dict[str, dict[str, float]], rate: float, overdraft_rate: float = 0.0, periods: int = 12
) -> dict[str, dict[str, float]]:
    """New accounts after one period: positive balances earn ``rate``, overdrawn ones are charged
    ``overdraft_rate``."""
    updated = {}
    for name in accounts:
        balance = balance_of(accounts, name)
        annual = rate if balance > 0 else overdraft_rate
        interest = period_interest(balance, annual, periods)
        updated[name] = {**accounts[name], "balance": round(balance + interest, 2)}
    return updated
