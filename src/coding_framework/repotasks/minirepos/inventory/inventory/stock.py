"""Stock levels: a stock is a dict mapping SKU to the whole number of units on hand."""

__all__ = ["in_stock", "quantity", "receive", "ship", "total_units"]


def quantity(stock: dict[str, int], sku: str) -> int:
    """Units of ``sku`` on hand; 0 for a SKU the stock does not list."""
    units = stock.get(sku, 0)
    if units < 0:
        raise ValueError(f"negative stock for {sku}: {units}")
    return units


def total_units(stock: dict[str, int]) -> int:
    """Units on hand across all SKUs."""
    total = 0
    for sku in stock:
        total += quantity(stock, sku)
    return total


def receive(stock: dict[str, int], sku: str, qty: int) -> dict[str, int]:
    """A new stock with ``qty`` more units of ``sku``."""
    if qty <= 0:
        raise ValueError(f"quantity must be positive, got {qty}")
    updated = dict(stock)
    updated[sku] = quantity(stock, sku) + qty
    return updated


def ship(stock: dict[str, int], sku: str, qty: int) -> dict[str, int]:
    """A new stock with ``qty`` units of ``sku`` taken out; a SKU that reaches zero is dropped."""
    if qty <= 0:
        raise ValueError(f"quantity must be positive, got {qty}")
    on_hand = quantity(stock, sku)
    if qty > on_hand:
        raise ValueError(f"insufficient stock for {sku}: {on_hand} on hand, {qty} requested")
    updated = dict(stock)
    remaining = on_hand - qty
    if remaining == 0:
        del updated[sku]
    else:
        updated[sku] = remaining
    return updated


def in_stock(stock: dict[str, int], sku: str, minimum: int = 1) -> bool:
    """Whether at least ``minimum`` units of ``sku`` are on hand."""
    if minimum < 1:
        raise ValueError(f"minimum must be at least 1, got {minimum}")
    return quantity(stock, sku) >= minimum
