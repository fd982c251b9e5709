"""Reports built from the stock, reorder, valuation and warehouse functions."""

from inventory.reorder import reorder_list
from inventory.stock import quantity, total_units
from inventory.valuation import line_value, stock_value

__all__ = ["inventory_value", "low_stock_report", "most_valuable", "warehouse_summary"]


def low_stock_report(stock: dict[str, int], points: dict[str, int], multiplier: int = 2) -> list[str]:
    """One line per SKU to reorder, by SKU: ``"SKU: on hand N, order M"``."""
    lines = []
    for sku, units in reorder_list(stock, points, multiplier):
        lines.append(f"{sku}: on hand {quantity(stock, sku)}, order {units}")
    return lines


def warehouse_summary(
    warehouses: dict[str, dict[str, int]], prices: dict[str, float]
) -> dict[str, dict[str, float]]:
    """For each warehouse, its units on hand and stock value."""
    summary: dict[str, dict[str, float]] = {}
    for name in sorted(warehouses):
        stock = warehouses[name]
        summary[name] = {"units": total_units(stock), "value": stock_value(stock, prices)}
    return summary


def inventory_value(warehouses: dict[str, dict[str, int]], prices: dict[str, float]) -> float:
    """The value of the stock of all warehouses together."""
    total = 0.0
    for stock in warehouses.values():
        total += stock_value(stock, prices)
    return round(total, 2)


def most_valuable(stock: dict[str, int], prices: dict[str, float], n: int = 3) -> list[tuple[str, float]]:
    """The ``n`` (SKU, value) pairs of highest stock value, highest first, ties by SKU."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    values = [(sku, line_value(quantity(stock, sku), prices[sku])) for sku in stock]
    values.sort(key=lambda item: (-item[1], item[0]))
    return values[:n]
