"""Line items: dicts with "name", "price" (per unit) and "qty"."""

from typing import Any

from invoice.money import from_cents, round_money, to_cents


def validate_item(item: dict[str, Any]) -> dict[str, Any]:
    """`item` itself when it has a name, a price of at least 0 and a positive quantity."""
    for key in ("name", "price", "qty"):
        if key not in item:
            raise KeyError(key)
    if item["price"] < 0:
        raise ValueError("price must not be negative")
    if item["qty"] <= 0:
        raise ValueError("qty must be positive")
    return item


def line_total(item: dict[str, Any]) -> float:
    """Price times quantity, rounded to cents."""
    validate_item(item)
    return round_money(item["price"] * item["qty"])


def subtotal(items: list[dict[str, Any]]) -> float:
    """The sum of the line totals."""
    cents = 0
    for item in items:
        cents += to_cents(line_total(item))
    return from_cents(cents)


def total_quantity(items: list[dict[str, Any]]) -> int:
    """The number of units over all items."""
    total = 0
    for item in items:
        total += validate_item(item)["qty"]
    return total


def most_expensive(items: list[dict[str, Any]]) -> str | None:
    """The name of the item with the largest line total (the first one on ties); None for no items."""
    best = None
    best_total = -1.0
    for item in items:
        total = line_total(item)
        if total > best_total:
            best, best_total = item["name"], total
    return best
