from inventory.stock import in_stock, quantity, receive, ship, total_units


def test_quantity_of_a_listed_sku():
    assert quantity({"A": 4, "B": 2}, "B") == 2


def test_receive_then_ship():
    stock = receive({"A": 4}, "A", 6)
    assert stock == {"A": 10}
    assert ship(stock, "A", 3) == {"A": 7}


def test_total_and_in_stock():
    stock = {"A": 4, "B": 2}
    assert total_units(stock) == 6
    assert in_stock(stock, "A")
