from inventory.warehouse import batch_move, locate, total_across, transfer, utilisation, warehouse_stock


def test_transfer_between_warehouses():
    sites = {"north": {"A": 5}, "south": {}}
    moved = transfer(sites, "north", "south", "A", 2)
    assert moved == {"north": {"A": 3}, "south": {"A": 2}}
    assert warehouse_stock(moved, "south") == {"A": 2}


def test_batch_move_and_totals():
    sites = {"north": {"A": 5, "B": 1}, "south": {"A": 1}}
    moved = batch_move(sites, "north", "south", [("A", 1), ("B", 1)])
    assert total_across(moved, "A") == 6
    assert locate(moved, "A") == ["north", "south"]


def test_utilisation_in_percent():
    assert utilisation({"north": {"A": 50}}, "north", 200) == 25.0
