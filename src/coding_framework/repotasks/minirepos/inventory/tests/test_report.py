from inventory.report import inventory_value, low_stock_report, most_valuable, warehouse_summary


def test_low_stock_report_lines():
    assert low_stock_report({"A": 2, "B": 9}, {"A": 4, "B": 4}) == ["A: on hand 2, order 6"]


def test_summary_and_value():
    sites = {"north": {"A": 2}, "south": {"A": 1, "B": 4}}
    prices = {"A": 10.0, "B": 0.5}
    assert warehouse_summary(sites, prices)["south"] == {"units": 5, "value": 12.0}
    assert inventory_value(sites, prices) == 32.0


def test_most_valuable_first():
    assert most_valuable({"A": 1, "B": 3}, {"A": 1.0, "B": 2.0}) == [("B", 6.0), ("A", 1.0)]
