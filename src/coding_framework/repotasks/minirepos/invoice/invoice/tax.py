"""Sales tax by category."""

from invoice.money import round_money

RATES = {"exempt": 0.0, "reduced": 0.05, "standard": 0.2}


def tax_rate(category: str, rates: dict[str, float] | None = None) -> float:
    """The rate of `category` in `rates` (the standard table when None); KeyError for an unknown one."""
    table = RATES if rates is None else rates
    return table[category]


def tax_amount(amount: float, rate: float) -> float:
    """The tax on `amount` at `rate` (between 0 and 1), rounded to cents."""
    if rate < 0 or rate > 1:
        raise ValueError("rate must be between 0 and 1")
    return round_money(amount * rate)


def add_tax(amount: float, rate: float) -> float:
    """`amount` plus its tax."""
    tax = tax_amount(amount, rate)
    return round_money(amount + tax)


def net_from_gross(gross: float, rate: float) -> float:
    """The amount before tax whose gross, at `rate`, is `gross`, rounded to cents."""
    if rate < 0 or rate > 1:
        raise ValueError("rate must be between 0 and 1")
    return round_money(gross / (1 + rate))
