"""Reorder points: when a SKU falls to its reorder point, order enough to bring it back to a target."""

from inventory.stock import quantity

__all__ = ["days_of_cover", "needs_reorder", "reorder_list", "reorder_quantity"]


def needs_reorder(stock: dict[str, int], sku: str, reorder_point: int) -> bool:
    """Whether ``sku`` has fallen to or below ``reorder_point``."""
    if reorder_point < 0:
        raise ValueError(f"reorder point must not be negative, got {reorder_point}")
    return quantity(stock, sku) <= reorder_point


def reorder_quantity(current: int, target: int, pack_size: int = 1) -> int:
    """Units to order to bring ``current`` up to ``target``, rounded up to whole packs of ``pack_size``;
    0 when ``current`` already reaches ``target``."""
    if pack_size < 1:
        raise ValueError(f"pack size must be at least 1, got {pack_size}")
    if current >= target:
        return 0
    shortfall = target - current
    packs = (shortfall + pack_size - 1) // pack_size
    return packs * pack_size


def reorder_list(
    stock: dict[str, int], points: dict[str, int], multiplier: int = 2, pack_size: int = 1
) -> list[tuple[str, int]]:
    """(SKU, units to order) for each SKU of ``points`` at or below its reorder point, by SKU. The target
    level is ``multiplier`` times the reorder point; SKUs with nothing to order are left out."""
    orders = []
    for sku in sorted(points):
        point = points[sku]
        if needs_reorder(stock, sku, point):
            units = reorder_quantity(quantity(stock, sku), point * multiplier, pack_size)
            if units > 0:
                orders.append((sku, units))
    return orders


def days_of_cover(stock: dict[str, int], sku: str, daily_demand: int) -> int:
    """Whole days the units of ``sku`` on hand last at ``daily_demand`` units a day."""
    if daily_demand <= 0:
        raise ValueError(f"daily demand must be positive, got {daily_demand}")
    return quantity(stock, sku) // daily_demand
