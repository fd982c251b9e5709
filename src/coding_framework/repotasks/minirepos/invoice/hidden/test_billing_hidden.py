import pytest
from invoice.billing import balance_due, invoice_lines, invoice_totals, split_bill


def test_invoice_totals_no_discount():
    items = [{"name": "pen", "price": 1.5, "qty": 4}, {"name": "book", "price": 12.25, "qty": 2}]
    assert invoice_totals(items) == {"subtotal": 30.5, "discount": 0.0, "tax": 6.1, "total": 36.6}


def test_invoice_totals_tier_threshold():
    items = [{"name": "desk", "price": 250.0, "qty": 2}]
    assert invoice_totals(items) == {"subtotal": 500.0, "discount": 25.0, "tax": 95.0, "total": 570.0}


def test_invoice_totals_tier_then_coupon_then_tax():
    items = [{"name": "tv", "price": 1000.0, "qty": 1}]
    expected = {"subtotal": 1000.0, "discount": 190.0, "tax": 40.5, "total": 850.5}
    assert invoice_totals(items, "reduced", "TENOFF") == expected


def test_invoice_totals_coupon_exempt():
    items = [{"name": "pen", "price": 1.5, "qty": 4}, {"name": "book", "price": 12.25, "qty": 2}]
    expected = {"subtotal": 30.5, "discount": 5.0, "tax": 0.0, "total": 25.5}
    assert invoice_totals(items, "exempt", "SAVE5") == expected


def test_invoice_totals_empty():
    assert invoice_totals([]) == {"subtotal": 0.0, "discount": 0.0, "tax": 0.0, "total": 0.0}


def test_invoice_totals_coupon_by_keyword():
    items = [{"name": "lamp", "price": 40.0, "qty": 1}]
    expected = {"subtotal": 40.0, "discount": 20.0, "tax": 4.0, "total": 24.0}
    assert invoice_totals(items, coupon="HALF") == expected


def test_invoice_totals_unknown_category_or_coupon():
    items = [{"name": "lamp", "price": 40.0, "qty": 1}]
    with pytest.raises(KeyError):
        invoice_totals(items, "luxury")
    with pytest.raises(KeyError):
        invoice_totals(items, "standard", "BOGUS")


def test_invoice_lines_default_symbol():
    assert invoice_lines([{"name": "pen", "price": 1.5, "qty": 4}]) == ["pen: 4 x $1.50 = $6.00"]


def test_invoice_lines_other_symbol_and_thousands():
    lines = invoice_lines([{"name": "sofa", "price": 625.0, "qty": 2}], "€")
    assert lines == ["sofa: 2 x €625.00 = €1,250.00"]


def test_invoice_lines_empty():
    assert invoice_lines([]) == []


def test_invoice_lines_invalid_item_raises():
    with pytest.raises(ValueError):
        invoice_lines([{"name": "a", "price": 1.0, "qty": 0}])


def test_split_bill_leftover_cents_first():
    assert split_bill(10.0, 3) == [3.34, 3.33, 3.33]


def test_split_bill_even():
    assert split_bill(9.0, 3) == [3.0, 3.0, 3.0]


def test_split_bill_cents():
    assert split_bill(0.05, 2) == [0.03, 0.02]
    assert split_bill(0.11, 4) == [0.03, 0.03, 0.03, 0.02]


def test_split_bill_one_person():
    assert split_bill(12.34, 1) == [12.34]


def test_split_bill_no_people_raises():
    with pytest.raises(ValueError):
        split_bill(10.0, 0)


def test_balance_due_partial():
    items = [{"name": "pen", "price": 1.5, "qty": 4}, {"name": "book", "price": 12.25, "qty": 2}]
    assert balance_due(items, 10.0) == 26.6


def test_balance_due_paid_in_full_or_more():
    items = [{"name": "pen", "price": 1.5, "qty": 4}, {"name": "book", "price": 12.25, "qty": 2}]
    assert balance_due(items, 36.6) == 0.0
    assert balance_due(items, 50.0) == 0.0


def test_balance_due_with_category_and_coupon():
    items = [{"name": "pen", "price": 1.5, "qty": 4}, {"name": "book", "price": 12.25, "qty": 2}]
    assert balance_due(items, 0.0, "exempt", "SAVE5") == 25.5


def test_balance_due_nothing_paid_with_tier():
    assert balance_due([{"name": "desk", "price": 250.0, "qty": 2}], 0.0) == 570.0
