import pytest
from invoice.items import line_total, most_expensive, subtotal, total_quantity, validate_item


def test_validate_item_returns_item():
    item = {"name": "cup", "price": 0.0, "qty": 1}
    assert validate_item(item) == item


def test_validate_item_missing_name():
    with pytest.raises(KeyError):
        validate_item({"price": 1.0, "qty": 1})


def test_validate_item_missing_price_or_qty():
    with pytest.raises(KeyError):
        validate_item({"name": "a", "qty": 1})
    with pytest.raises(KeyError):
        validate_item({"name": "a", "price": 1.0})


def test_validate_item_negative_price():
    with pytest.raises(ValueError):
        validate_item({"name": "a", "price": -0.01, "qty": 1})


def test_validate_item_zero_qty():
    with pytest.raises(ValueError):
        validate_item({"name": "a", "price": 1.0, "qty": 0})


def test_line_total_simple():
    assert line_total({"name": "pen", "price": 1.5, "qty": 4}) == 6.0


def test_line_total_rounds_to_cents():
    assert line_total({"name": "clip", "price": 0.1, "qty": 3}) == 0.3
    assert line_total({"name": "nut", "price": 0.333, "qty": 3}) == 1.0


def test_line_total_invalid_item():
    with pytest.raises(ValueError):
        line_total({"name": "a", "price": 2.0, "qty": -1})


def test_subtotal_empty():
    assert subtotal([]) == 0.0


def test_subtotal_sums_in_cents():
    items = [{"name": "a", "price": 0.1, "qty": 3}, {"name": "b", "price": 0.2, "qty": 1}]
    assert subtotal(items) == 0.5


def test_subtotal_single():
    assert subtotal([{"name": "a", "price": 19.99, "qty": 2}]) == 39.98


def test_total_quantity_empty():
    assert total_quantity([]) == 0


def test_total_quantity_sums():
    items = [{"name": "a", "price": 1.0, "qty": 3}, {"name": "b", "price": 2.0, "qty": 5}]
    assert total_quantity(items) == 8


def test_total_quantity_invalid_item():
    with pytest.raises(ValueError):
        total_quantity([{"name": "a", "price": 1.0, "qty": 0}])


def test_most_expensive_empty():
    assert most_expensive([]) is None


def test_most_expensive_by_line_total_not_price():
    items = [{"name": "gem", "price": 10.0, "qty": 1}, {"name": "bead", "price": 3.0, "qty": 4}]
    assert most_expensive(items) == "bead"


def test_most_expensive_first_on_tie():
    items = [{"name": "a", "price": 2.0, "qty": 2}, {"name": "b", "price": 4.0, "qty": 1}]
    assert most_expensive(items) == "a"


def test_most_expensive_free_item():
    assert most_expensive([{"name": "free", "price": 0.0, "qty": 1}]) == "free"
