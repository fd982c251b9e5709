"""Discounts: tiers by order size, bulk unit prices and coupon codes."""

from invoice.money import round_money

TIERS = ((1000.0, 0.1), (500.0, 0.05), (100.0, 0.02))


def discount_rate(amount: float, tiers: tuple[tuple[float, float], ...] = TIERS) -> float:
    """The rate of the first (threshold, rate) tier, highest threshold first, that `amount` reaches."""
    for threshold, rate in tiers:
        if amount >= threshold:
            return rate
    return 0.0


def apply_discount(amount: float, rate: float) -> float:
    """`amount` less `rate` (between 0 and 1) of it, rounded to cents."""
    if rate < 0 or rate > 1:
        raise ValueError("rate must be between 0 and 1")
    return round_money(amount * (1 - rate))


def bulk_price(price: float, qty: int, min_qty: int = 10, rate: float = 0.1) -> float:
    """The unit price when buying `qty` units: `rate` off once `qty` reaches `min_qty`."""
    if qty >= min_qty:
        return apply_discount(price, rate)
    return price


def coupon_value(amount: float, code: str) -> float:
    """What coupon `code` takes off `amount`, never more than `amount`; "" is no coupon."""
    if code == "":
        return 0.0
    if code == "SAVE5":
        value = 5.0
    elif code == "TENOFF":
        value = amount * 0.1
    elif code == "HALF":
        value = amount / 2
    else:
        raise KeyError(code)
    return round_money(min(value, amount))
