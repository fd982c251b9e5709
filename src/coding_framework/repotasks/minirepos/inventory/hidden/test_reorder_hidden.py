import pytest
from inventory.reorder import days_of_cover, needs_reorder, reorder_list, reorder_quantity


def test_needs_reorder_at_the_point():
    assert needs_reorder({"A": 5}, "A", 5) is True


def test_needs_reorder_below_and_above():
    assert needs_reorder({"A": 4}, "A", 5) is True
    assert needs_reorder({"A": 6}, "A", 5) is False


def test_needs_reorder_point_zero():
    assert needs_reorder({}, "A", 0) is True
    assert needs_reorder({"A": 1}, "A", 0) is False


def test_needs_reorder_negative_point_raises():
    with pytest.raises(ValueError):
        needs_reorder({"A": 1}, "A", -1)


def test_reorder_quantity_shortfall():
    assert reorder_quantity(3, 10) == 7


def test_reorder_quantity_at_or_above_target_is_zero():
    assert reorder_quantity(10, 10) == 0
    assert reorder_quantity(12, 10) == 0


def test_reorder_quantity_rounds_up_to_packs():
    assert reorder_quantity(3, 10, 4) == 8
    assert reorder_quantity(2, 10, 5) == 10


def test_reorder_quantity_exact_packs():
    assert reorder_quantity(0, 10, 5) == 10


def test_reorder_quantity_one_unit_short():
    assert reorder_quantity(9, 10, 6) == 6


def test_reorder_quantity_pack_size_zero_raises():
    with pytest.raises(ValueError):
        reorder_quantity(3, 10, 0)


def test_reorder_quantity_pack_size_one_allowed():
    assert reorder_quantity(4, 9, 1) == 5


def test_reorder_list_orders_up_to_twice_the_point():
    assert reorder_list({"A": 2}, {"A": 5}) == [("A", 8)]


def test_reorder_list_at_the_point():
    assert reorder_list({"A": 5}, {"A": 5}) == [("A", 5)]


def test_reorder_list_skips_skus_above_the_point():
    assert reorder_list({"A": 6, "B": 1}, {"A": 5, "B": 5}) == [("B", 9)]


def test_reorder_list_sorted_by_sku():
    assert reorder_list({}, {"B": 1, "A": 2}) == [("A", 4), ("B", 2)]


def test_reorder_list_single_unit_order():
    assert reorder_list({"A": 1}, {"A": 1}) == [("A", 1)]


def test_reorder_list_leaves_out_nothing_to_order():
    assert reorder_list({}, {"A": 0}) == []


def test_reorder_list_multiplier_and_packs():
    assert reorder_list({"A": 1}, {"A": 4}, 3) == [("A", 11)]
    assert reorder_list({"A": 1}, {"A": 4}, 3, 5) == [("A", 15)]


def test_days_of_cover_whole_days():
    assert days_of_cover({"A": 10}, "A", 3) == 3


def test_days_of_cover_exact_division():
    assert days_of_cover({"A": 12}, "A", 4) == 3


def test_days_of_cover_demand_above_stock():
    assert days_of_cover({"A": 2}, "A", 5) == 0
    assert days_of_cover({}, "A", 1) == 0


def test_days_of_cover_demand_of_one():
    assert days_of_cover({"A": 7}, "A", 1) == 7


def test_days_of_cover_zero_demand_raises():
    with pytest.raises(ValueError):
        days_of_cover({"A": 7}, "A", 0)
