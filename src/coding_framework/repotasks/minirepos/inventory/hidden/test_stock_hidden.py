import pytest
from inventory.stock import in_stock, quantity, receive, ship, total_units


def test_quantity_listed_sku():
    assert quantity({"A": 4, "B": 7}, "B") == 7


def test_quantity_missing_sku_is_zero():
    assert quantity({"A": 4}, "Z") == 0
    assert quantity({}, "A") == 0


def test_quantity_zero_entry():
    assert quantity({"A": 0}, "A") == 0


def test_quantity_negative_entry_raises():
    with pytest.raises(ValueError):
        quantity({"A": -1}, "A")


def test_total_units_sums_all_skus():
    assert total_units({"A": 4, "B": 7, "C": 1}) == 12


def test_total_units_empty_stock():
    assert total_units({}) == 0


def test_total_units_single_sku():
    assert total_units({"A": 3}) == 3


def test_total_units_rejects_negative_entry():
    with pytest.raises(ValueError):
        total_units({"A": 3, "B": -2})


def test_receive_new_sku():
    assert receive({"A": 4}, "B", 3) == {"A": 4, "B": 3}


def test_receive_adds_to_existing_sku():
    assert receive({"A": 4}, "A", 3) == {"A": 7}


def test_receive_a_single_unit():
    assert receive({}, "A", 1) == {"A": 1}


def test_receive_leaves_the_original_stock_alone():
    stock = {"A": 4}
    receive(stock, "A", 3)
    assert stock == {"A": 4}


def test_receive_zero_raises():
    with pytest.raises(ValueError):
        receive({"A": 4}, "A", 0)


def test_receive_negative_raises():
    with pytest.raises(ValueError):
        receive({"A": 4}, "A", -2)


def test_ship_part_of_the_stock():
    assert ship({"A": 10, "B": 1}, "A", 4) == {"A": 6, "B": 1}


def test_ship_everything_drops_the_sku():
    assert ship({"A": 10, "B": 1}, "A", 10) == {"B": 1}


def test_ship_a_single_unit():
    assert ship({"A": 2}, "A", 1) == {"A": 1}


def test_ship_leaves_the_original_stock_alone():
    stock = {"A": 5}
    ship(stock, "A", 5)
    assert stock == {"A": 5}


def test_ship_more_than_on_hand_raises():
    with pytest.raises(ValueError):
        ship({"A": 3}, "A", 4)


def test_ship_unlisted_sku_raises():
    with pytest.raises(ValueError):
        ship({"A": 3}, "B", 1)


def test_ship_zero_raises():
    with pytest.raises(ValueError):
        ship({"A": 3}, "A", 0)


def test_ship_negative_raises():
    with pytest.raises(ValueError):
        ship({"A": 3}, "A", -1)


def test_in_stock_default_needs_one_unit():
    assert in_stock({"A": 1}, "A") is True
    assert in_stock({"A": 1}, "B") is False


def test_in_stock_exact_minimum():
    assert in_stock({"A": 5}, "A", 5) is True


def test_in_stock_below_minimum():
    assert in_stock({"A": 5}, "A", 6) is False


def test_in_stock_minimum_zero_raises():
    with pytest.raises(ValueError):
        in_stock({"A": 5}, "A", 0)
