"""Several warehouses: a dict mapping warehouse name to its stock."""

from inventory.stock import in_stock, quantity, receive, ship, total_units

__all__ = ["batch_move", "locate", "total_across", "transfer", "utilisation", "warehouse_stock"]


def warehouse_stock(warehouses: dict[str, dict[str, int]], name: str) -> dict[str, int]:
    """The stock of warehouse ``name``; ValueError for an unknown warehouse."""
    if name not in warehouses:
        raise ValueError(f"unknown warehouse {name}")
    return warehouses[name]


def transfer(
    warehouses: dict[str, dict[str, int]], source: str, target: str, sku: str, qty: int
) -> dict[str, dict[str, int]]:
    """New warehouses with ``qty`` units of ``sku`` moved from ``source`` to ``target``."""
    if source == target:
        raise ValueError(f"cannot move stock from {source} to itself")
    updated = dict(warehouses)
    updated[source] = ship(warehouse_stock(warehouses, source), sku, qty)
    updated[target] = receive(warehouse_stock(warehouses, target), sku, qty)
    return updated


def batch_move(
    warehouses: dict[str, dict[str, int]], source: str, target: str, moves: list[tuple[str, int]]
) -> dict[str, dict[str, int]]:
    """New warehouses with every (SKU, units) move applied in order; a failing move raises and leaves the
    given warehouses as they were."""
    if not moves:
        raise ValueError("no moves given")
    updated = warehouses
    for sku, qty in moves:
        updated = transfer(updated, source, target, sku, qty)
    return updated


def total_across(warehouses: dict[str, dict[str, int]], sku: str) -> int:
    """Units of ``sku`` on hand across all warehouses."""
    total = 0
    for stock in warehouses.values():
        total += quantity(stock, sku)
    return total


def locate(warehouses: dict[str, dict[str, int]], sku: str, minimum: int = 1) -> list[str]:
    """Names of the warehouses holding at least ``minimum`` units of ``sku``, most units first, ties by
    name."""
    found = [name for name, stock in warehouses.items() if in_stock(stock, sku, minimum)]
    return sorted(found, key=lambda name: (-quantity(warehouses[name], sku), name))


def utilisation(warehouses: dict[str, dict[str, int]], name: str, capacity: int) -> float:
    """The share of ``capacity`` units warehouse ``name`` fills, in percent to one decimal place."""
    if capacity <= 0:
        raise ValueError(f"capacity must be positive, got {capacity}")
    used = total_units(warehouse_stock(warehouses, name))
    return round(100 * used / capacity, 1)
