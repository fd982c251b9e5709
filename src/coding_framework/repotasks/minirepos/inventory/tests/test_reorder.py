from inventory.reorder import days_of_cover, needs_reorder, reorder_list, reorder_quantity


def test_needs_reorder_below_the_point():
    assert needs_reorder({"A": 2}, "A", 5)
    assert not needs_reorder({"A": 9}, "A", 5)


def test_reorder_quantity_fills_up_to_the_target():
    assert reorder_quantity(3, 10) == 7


def test_reorder_list_and_cover():
    assert reorder_list({"A": 2, "B": 20}, {"A": 5, "B": 5}) == [("A", 8)]
    assert days_of_cover({"A": 30}, "A", 10) == 3
