from invoice.items import line_total, most_expensive, subtotal, total_quantity, validate_item


def test_validate_and_line_total():
    pen = {"name": "pen", "price": 1.5, "qty": 4}
    assert validate_item(pen) == pen
    assert line_total(pen) == 6.0


def test_subtotal_and_quantity():
    items = [{"name": "pen", "price": 1.5, "qty": 4}, {"name": "book", "price": 12.25, "qty": 2}]
    assert subtotal(items) == 30.5
    assert total_quantity(items) == 6


def test_most_expensive():
    items = [{"name": "pen", "price": 1.5, "qty": 4}, {"name": "book", "price": 12.25, "qty": 2}]
    assert most_expensive(items) == "book"
