import pytest
from invoice.discount import apply_discount, bulk_price, coupon_value, discount_rate


def test_discount_rate_below_all_tiers():
    assert discount_rate(99.99) == 0.0
    assert discount_rate(0.0) == 0.0


def test_discount_rate_lowest_tier_threshold():
    assert discount_rate(100.0) == 0.02


def test_discount_rate_middle_tier():
    assert discount_rate(500.0) == 0.05
    assert discount_rate(999.99) == 0.05


def test_discount_rate_top_tier():
    assert discount_rate(1000.0) == 0.1


def test_discount_rate_custom_tiers():
    assert discount_rate(50.0, ((50.0, 0.5),)) == 0.5
    assert discount_rate(49.0, ((50.0, 0.5),)) == 0.0


def test_apply_discount_simple():
    assert apply_discount(200.0, 0.1) == 180.0


def test_apply_discount_bounds():
    assert apply_discount(42.5, 0.0) == 42.5
    assert apply_discount(42.5, 1.0) == 0.0


def test_apply_discount_bad_rate_raises():
    with pytest.raises(ValueError):
        apply_discount(10.0, 1.5)
    with pytest.raises(ValueError):
        apply_discount(10.0, -0.1)


def test_bulk_price_below_default_minimum():
    assert bulk_price(2.0, 9) == 2.0


def test_bulk_price_at_default_minimum():
    assert bulk_price(2.0, 10) == 1.8


def test_bulk_price_custom_minimum_and_rate():
    assert bulk_price(4.0, 5, 5, 0.25) == 3.0
    assert bulk_price(4.0, 4, 5, 0.25) == 4.0


def test_bulk_price_default_rate():
    assert bulk_price(10.0, 3, 3) == 9.0


def test_coupon_value_none():
    assert coupon_value(30.0, "") == 0.0


def test_coupon_value_save5():
    assert coupon_value(30.0, "SAVE5") == 5.0


def test_coupon_value_capped_at_amount():
    assert coupon_value(3.0, "SAVE5") == 3.0


def test_coupon_value_tenoff():
    assert coupon_value(45.5, "TENOFF") == 4.55


def test_coupon_value_half():
    assert coupon_value(9.0, "HALF") == 4.5


def test_coupon_value_unknown_raises():
    with pytest.raises(KeyError):
        coupon_value(10.0, "FREE")
