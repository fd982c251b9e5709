import pytest
from inventory.warehouse import batch_move, locate, total_across, transfer, utilisation, warehouse_stock


def test_warehouse_stock_known():
    assert warehouse_stock({"north": {"A": 1}, "south": {}}, "north") == {"A": 1}


def test_warehouse_stock_empty_warehouse():
    assert warehouse_stock({"north": {"A": 1}, "south": {}}, "south") == {}


def test_warehouse_stock_unknown_raises():
    with pytest.raises(ValueError):
        warehouse_stock({"north": {}}, "east")


def test_transfer_moves_units():
    sites = {"north": {"A": 5}, "south": {"A": 1}}
    assert transfer(sites, "north", "south", "A", 2) == {"north": {"A": 3}, "south": {"A": 3}}


def test_transfer_everything_empties_the_source():
    sites = {"north": {"A": 5}, "south": {}}
    assert transfer(sites, "north", "south", "A", 5) == {"north": {}, "south": {"A": 5}}


def test_transfer_leaves_other_warehouses_and_the_input_alone():
    sites = {"north": {"A": 5}, "south": {}, "east": {"A": 9}}
    moved = transfer(sites, "north", "south", "A", 1)
    assert moved["east"] == {"A": 9}
    assert sites == {"north": {"A": 5}, "south": {}, "east": {"A": 9}}


def test_transfer_insufficient_stock_raises():
    with pytest.raises(ValueError):
        transfer({"north": {"A": 1}, "south": {}}, "north", "south", "A", 2)


def test_transfer_to_itself_raises():
    with pytest.raises(ValueError):
        transfer({"north": {"A": 5}}, "north", "north", "A", 1)


def test_transfer_unknown_target_raises():
    with pytest.raises(ValueError):
        transfer({"north": {"A": 5}}, "north", "south", "A", 1)


def test_batch_move_applies_moves_in_order():
    sites = {"north": {"A": 5, "B": 2}, "south": {"B": 1}}
    moved = batch_move(sites, "north", "south", [("A", 2), ("B", 2), ("A", 1)])
    assert moved == {"north": {"A": 2}, "south": {"A": 3, "B": 3}}


def test_batch_move_single_move():
    sites = {"north": {"A": 5}, "south": {}}
    assert batch_move(sites, "north", "south", [("A", 4)]) == {"north": {"A": 1}, "south": {"A": 4}}


def test_batch_move_failure_leaves_input_alone():
    sites = {"north": {"A": 5}, "south": {}}
    with pytest.raises(ValueError):
        batch_move(sites, "north", "south", [("A", 4), ("A", 4)])
    assert sites == {"north": {"A": 5}, "south": {}}


def test_batch_move_no_moves_raises():
    with pytest.raises(ValueError):
        batch_move({"north": {"A": 5}, "south": {}}, "north", "south", [])


def test_total_across_warehouses():
    assert total_across({"north": {"A": 5}, "south": {"A": 2, "B": 9}, "east": {}}, "A") == 7


def test_total_across_missing_everywhere():
    assert total_across({"north": {"A": 5}}, "B") == 0
    assert total_across({}, "A") == 0


def test_total_across_single_warehouse():
    assert total_across({"north": {"A": 5}}, "A") == 5


def test_locate_most_units_first():
    sites = {"north": {"A": 2}, "south": {"A": 9}, "east": {"B": 4}}
    assert locate(sites, "A") == ["south", "north"]


def test_locate_ties_by_name():
    sites = {"west": {"A": 3}, "north": {"A": 3}, "east": {"A": 1}}
    assert locate(sites, "A") == ["north", "west", "east"]


def test_locate_default_minimum_is_one_unit():
    assert locate({"north": {"A": 1}, "south": {}}, "A") == ["north"]


def test_locate_with_minimum():
    sites = {"north": {"A": 2}, "south": {"A": 9}, "east": {"A": 3}}
    assert locate(sites, "A", 3) == ["south", "east"]


def test_utilisation_percent():
    assert utilisation({"north": {"A": 30, "B": 20}}, "north", 200) == 25.0


def test_utilisation_rounds_to_one_place():
    assert utilisation({"north": {"A": 1}}, "north", 3) == 33.3


def test_utilisation_full_and_empty():
    assert utilisation({"north": {"A": 40}, "south": {}}, "north", 40) == 100.0
    assert utilisation({"north": {"A": 40}, "south": {}}, "south", 40) == 0.0


def test_utilisation_zero_capacity_raises():
    with pytest.raises(ValueError):
        utilisation({"north": {"A": 1}}, "north", 0)


def test_utilisation_capacity_of_one():
    assert utilisation({"north": {"A": 1}}, "north", 1) == 100.0
