"""Valuation at cost: ``prices`` and ``costs`` map SKU to the unit cost; values are rounded to cents."""

from inventory.stock import quantity

__all__ = ["cost_after_receipt", "line_value", "markdown", "stock_value", "weighted_average_cost"]


def line_value(qty: int, unit_cost: float) -> float:
    """The value of ``qty`` units at ``unit_cost`` each."""
    if not isinstance(qty, int):
        raise TypeError(f"quantity must be a whole number, got {qty!r}")
    if qty < 0 or unit_cost < 0:
        raise ValueError(f"quantity and cost must not be negative, got {qty} and {unit_cost}")
    return round(qty * unit_cost, 2)


def stock_value(stock: dict[str, int], prices: dict[str, float]) -> float:
    """The value of a whole stock; a SKU without a price raises ValueError."""
    total = 0.0
    for sku in stock:
        if sku not in prices:
            raise ValueError(f"no price for {sku}")
        total += line_value(quantity(stock, sku), prices[sku])
    return round(total, 2)


def weighted_average_cost(old_qty: int, old_cost: float, new_qty: int, new_cost: float) -> float:
    """The unit cost of ``old_qty`` units at ``old_cost`` merged with ``new_qty`` units at ``new_cost``."""
    units = old_qty + new_qty
    if units <= 0:
        raise ValueError("no units to average over")
    return round((old_qty * old_cost + new_qty * new_cost) / units, 2)


def cost_after_receipt(
    stock: dict[str, int], costs: dict[str, float], sku: str, qty: int, unit_cost: float
) -> dict[str, float]:
    """New unit costs after receiving ``qty`` units of ``sku`` at ``unit_cost`` into ``stock``."""
    updated = dict(costs)
    on_hand = quantity(stock, sku)
    if on_hand == 0:
        updated[sku] = round(unit_cost, 2)
    else:
        updated[sku] = weighted_average_cost(on_hand, costs[sku], qty, unit_cost)
    return updated


def markdown(unit_cost: float, percent: int = 10) -> float:
    """``unit_cost`` reduced by ``percent`` percent."""
    if percent < 0 or percent > 100:
        raise ValueError(f"percent must be between 0 and 100, got {percent}")
    return round(unit_cost * (100 - percent) / 100, 2)
