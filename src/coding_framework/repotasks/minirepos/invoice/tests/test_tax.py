from invoice.tax import add_tax, net_from_gross, tax_amount, tax_rate


def test_tax_rate():
    assert tax_rate("standard") == 0.2


def test_tax_amount_and_add_tax():
    assert tax_amount(50.0, 0.2) == 10.0
    assert add_tax(50.0, 0.2) == 60.0


def test_net_from_gross():
    assert net_from_gross(60.0, 0.2) == 50.0
