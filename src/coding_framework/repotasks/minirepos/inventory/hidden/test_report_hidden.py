import pytest
from inventory.report import inventory_value, low_stock_report, most_valuable, warehouse_summary


def test_low_stock_report_lines_by_sku():
    stock = {"B": 1, "A": 3, "C": 50}
    points = {"A": 4, "B": 2, "C": 10}
    assert low_stock_report(stock, points) == ["A: on hand 3, order 5", "B: on hand 1, order 3"]


def test_low_stock_report_at_the_point():
    assert low_stock_report({"A": 4}, {"A": 4}) == ["A: on hand 4, order 4"]


def test_low_stock_report_missing_sku():
    assert low_stock_report({}, {"A": 3}) == ["A: on hand 0, order 6"]


def test_low_stock_report_nothing_low():
    assert low_stock_report({"A": 9}, {"A": 4}) == []


def test_low_stock_report_with_multiplier():
    assert low_stock_report({"A": 1}, {"A": 2}, 5) == ["A: on hand 1, order 9"]


def test_warehouse_summary_per_warehouse():
    sites = {"south": {"A": 1, "B": 4}, "north": {"A": 2}}
    prices = {"A": 10.0, "B": 0.25}
    assert warehouse_summary(sites, prices) == {
        "north": {"units": 2, "value": 20.0},
        "south": {"units": 5, "value": 11.0},
    }


def test_warehouse_summary_empty_warehouse():
    assert warehouse_summary({"north": {}}, {"A": 1.0}) == {"north": {"units": 0, "value": 0}}


def test_warehouse_summary_missing_price_raises():
    with pytest.raises(ValueError):
        warehouse_summary({"north": {"A": 1}}, {"B": 1.0})


def test_inventory_value_all_warehouses():
    sites = {"north": {"A": 2}, "south": {"A": 1, "B": 4}}
    assert inventory_value(sites, {"A": 10.0, "B": 0.5}) == 32.0


def test_inventory_value_rounds_to_cents():
    sites = {"north": {"A": 1}, "south": {"A": 2}}
    assert inventory_value(sites, {"A": 0.1}) == 0.3


def test_inventory_value_no_warehouses():
    assert inventory_value({}, {"A": 1.0}) == 0


def test_most_valuable_default_top_three():
    stock = {"A": 1, "B": 2, "C": 3, "D": 4}
    prices = {"A": 1.0, "B": 1.0, "C": 1.0, "D": 1.0}
    assert most_valuable(stock, prices) == [("D", 4.0), ("C", 3.0), ("B", 2.0)]


def test_most_valuable_ties_by_sku():
    stock = {"C": 2, "B": 1, "A": 1}
    assert most_valuable(stock, {"A": 3.0, "B": 3.0, "C": 1.0}, 2) == [("A", 3.0), ("B", 3.0)]


def test_most_valuable_one():
    assert most_valuable({"A": 2, "B": 1}, {"A": 1.0, "B": 5.0}, 1) == [("B", 5.0)]


def test_most_valuable_n_zero_raises():
    with pytest.raises(ValueError):
        most_valuable({"A": 2}, {"A": 1.0}, 0)


def test_inventory_value_keeps_two_places():
    sites = {"north": {"A": 1}, "south": {"A": 2}}
    assert inventory_value(sites, {"A": 0.05}) == 0.15
