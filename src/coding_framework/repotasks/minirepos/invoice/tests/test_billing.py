from invoice.billing import balance_due, invoice_lines, invoice_totals, split_bill


def test_invoice_totals():
    items = [{"name": "pen", "price": 1.5, "qty": 4}, {"name": "book", "price": 12.25, "qty": 2}]
    assert invoice_totals(items) == {"subtotal": 30.5, "discount": 0.0, "tax": 6.1, "total": 36.6}


def test_invoice_lines():
    items = [{"name": "pen", "price": 1.5, "qty": 4}, {"name": "book", "price": 12.25, "qty": 2}]
    assert invoice_lines(items) == ["pen: 4 x $1.50 = $6.00", "book: 2 x $12.25 = $24.50"]


def test_split_bill():
    assert split_bill(9.0, 3) == [3.0, 3.0, 3.0]


def test_balance_due():
    items = [{"name": "pen", "price": 1.5, "qty": 4}, {"name": "book", "price": 12.25, "qty": 2}]
    assert balance_due(items, 6.6) == 30.0
