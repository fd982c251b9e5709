"""Amounts of money: cents, rounding, formatting and parsing."""


def to_cents(amount: float) -> int:
    """`amount` in whole cents, a half cent rounded away from zero."""
    whole = int(abs(amount) * 100 + 0.5)
    if amount < 0:
        return -whole
    return whole


def from_cents(cents: int) -> float:
    """An amount of `cents`, a whole number, in currency units."""
    if not isinstance(cents, int):
        raise TypeError("cents must be a whole number")
    return cents / 100


def round_money(amount: float) -> float:
    """`amount` rounded to whole cents."""
    cents = to_cents(amount)
    return from_cents(cents)


def format_money(amount: float, symbol: str = "$") -> str:
    """`amount` as text with a thousands separator and two decimals: -1234.5 -> "-$1,234.50"."""
    cents = to_cents(amount)
    sign = "-" if cents < 0 else ""
    whole, frac = divmod(abs(cents), 100)
    return f"{sign}{symbol}{whole:,}.{frac:02d}"


def parse_money(text: str, symbol: str = "$") -> float:
    """The amount in text such as "-$1,234.50" or "12", rounded to cents."""
    cleaned = text.strip().replace(",", "")
    negative = cleaned.startswith("-")
    if negative:
        cleaned = cleaned[1:]
    if cleaned.startswith(symbol):
        cleaned = cleaned[len(symbol):]
    value = round_money(float(cleaned))
    return -value if negative else value
