from invoice.discount import apply_discount, bulk_price, coupon_value, discount_rate


def test_discount_rate():
    assert discount_rate(50.0) == 0.0
    assert discount_rate(2000.0) == 0.1


def test_apply_discount():
    assert apply_discount(200.0, 0.1) == 180.0


def test_bulk_price():
    assert bulk_price(2.0, 20) == 1.8


def test_coupon_value():
    assert coupon_value(30.0, "SAVE5") == 5.0
