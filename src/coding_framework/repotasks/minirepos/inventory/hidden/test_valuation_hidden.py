import pytest
from inventory.valuation import cost_after_receipt, line_value, markdown, stock_value, weighted_average_cost


def test_line_value_multiplies():
    assert line_value(4, 2.5) == 10.0


def test_line_value_rounds_to_cents():
    assert line_value(7, 0.333) == 2.33


def test_line_value_zero_quantity_or_cost():
    assert line_value(0, 2.5) == 0
    assert line_value(3, 0) == 0


def test_line_value_negative_quantity_raises():
    with pytest.raises(ValueError):
        line_value(-1, 2.5)


def test_line_value_negative_cost_raises():
    with pytest.raises(ValueError):
        line_value(2, -0.5)


def test_line_value_fractional_quantity_raises():
    with pytest.raises(TypeError):
        line_value(2.5, 4)


def test_stock_value_sums_lines():
    assert stock_value({"A": 4, "B": 3}, {"A": 2.5, "B": 1.25}) == 13.75


def test_stock_value_empty_stock():
    assert stock_value({}, {"A": 2.5}) == 0


def test_stock_value_single_line():
    assert stock_value({"A": 2}, {"A": 0.75, "B": 9.0}) == 1.5


def test_stock_value_missing_price_raises():
    with pytest.raises(ValueError):
        stock_value({"A": 2, "B": 1}, {"A": 0.75})


def test_weighted_average_cost_equal_quantities():
    assert weighted_average_cost(10, 2.0, 10, 4.0) == 3.0


def test_weighted_average_cost_unequal_quantities():
    assert weighted_average_cost(10, 2.0, 30, 4.0) == 3.5


def test_weighted_average_cost_rounds_to_cents():
    assert weighted_average_cost(1, 1.0, 2, 1.5) == 1.33


def test_weighted_average_cost_one_side_empty():
    assert weighted_average_cost(1, 2.0, 0, 5.0) == 2.0
    assert weighted_average_cost(0, 2.0, 4, 5.0) == 5.0


def test_weighted_average_cost_no_units_raises():
    with pytest.raises(ValueError):
        weighted_average_cost(0, 2.0, 0, 5.0)


def test_cost_after_receipt_averages_with_stock_on_hand():
    assert cost_after_receipt({"A": 10}, {"A": 2.0}, "A", 30, 4.0) == {"A": 3.5}


def test_cost_after_receipt_new_sku_takes_the_receipt_cost():
    assert cost_after_receipt({}, {"B": 1.0}, "A", 5, 2.345) == {"B": 1.0, "A": 2.35}


def test_cost_after_receipt_empty_stock_ignores_old_cost():
    assert cost_after_receipt({"A": 0}, {"A": 9.0}, "A", 5, 2.0) == {"A": 2.0}


def test_cost_after_receipt_leaves_costs_alone():
    costs = {"A": 2.0}
    cost_after_receipt({"A": 10}, costs, "A", 10, 4.0)
    assert costs == {"A": 2.0}


def test_markdown_default_is_ten_percent():
    assert markdown(20.0) == 18.0


def test_markdown_given_percent():
    assert markdown(50.0, 25) == 37.5


def test_markdown_bounds():
    assert markdown(8.0, 0) == 8.0
    assert markdown(8.0, 100) == 0.0


def test_markdown_rounds_to_cents():
    assert markdown(9.99, 15) == 8.49


def test_markdown_out_of_range_raises():
    with pytest.raises(ValueError):
        markdown(8.0, 101)
    with pytest.raises(ValueError):
        markdown(8.0, -1)
