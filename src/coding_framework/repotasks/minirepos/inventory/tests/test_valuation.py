from inventory.valuation import cost_after_receipt, line_value, markdown, stock_value, weighted_average_cost


def test_line_and_stock_value():
    assert line_value(4, 2.5) == 10.0
    assert stock_value({"A": 4, "B": 1}, {"A": 2.5, "B": 1.25}) == 11.25


def test_average_cost_after_a_receipt():
    assert weighted_average_cost(10, 2.0, 10, 4.0) == 3.0
    assert cost_after_receipt({"A": 10}, {"A": 2.0}, "A", 10, 4.0) == {"A": 3.0}


def test_markdown_by_a_percentage():
    assert markdown(50.0, 20) == 40.0
