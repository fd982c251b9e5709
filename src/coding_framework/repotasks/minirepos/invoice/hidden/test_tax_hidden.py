import pytest
from invoice.tax import add_tax, net_from_gross, tax_amount, tax_rate


def test_tax_rate_default_table():
    assert tax_rate("standard") == 0.2
    assert tax_rate("reduced") == 0.05
    assert tax_rate("exempt") == 0.0


def test_tax_rate_is_case_sensitive():
    with pytest.raises(KeyError):
        tax_rate("Standard")


def test_tax_rate_custom_table():
    assert tax_rate("food", {"food": 0.1}) == 0.1


def test_tax_rate_unknown_raises():
    with pytest.raises(KeyError):
        tax_rate("luxury")


def test_tax_rate_custom_table_has_no_fallback():
    with pytest.raises(KeyError):
        tax_rate("standard", {"food": 0.1})


def test_tax_amount_simple():
    assert tax_amount(100.0, 0.2) == 20.0


def test_tax_amount_rounds():
    assert tax_amount(19.99, 0.2) == 4.0


def test_tax_amount_bounds_of_rate():
    assert tax_amount(80.0, 0.0) == 0.0
    assert tax_amount(80.0, 1.0) == 80.0


def test_tax_amount_bad_rate_raises():
    with pytest.raises(ValueError):
        tax_amount(10.0, 1.01)
    with pytest.raises(ValueError):
        tax_amount(10.0, -0.1)


def test_add_tax_simple():
    assert add_tax(100.0, 0.2) == 120.0


def test_add_tax_zero_rate():
    assert add_tax(10.0, 0.0) == 10.0


def test_add_tax_rounded():
    assert add_tax(19.99, 0.2) == 23.99


def test_net_from_gross_standard():
    assert net_from_gross(120.0, 0.2) == 100.0


def test_net_from_gross_reduced_and_zero():
    assert net_from_gross(105.0, 0.05) == 100.0
    assert net_from_gross(10.0, 0.0) == 10.0


def test_net_from_gross_full_rate():
    assert net_from_gross(10.0, 1.0) == 5.0


def test_net_from_gross_bad_rate_raises():
    with pytest.raises(ValueError):
        net_from_gross(10.0, 2.0)
    with pytest.raises(ValueError):
        net_from_gross(10.0, -0.5)
