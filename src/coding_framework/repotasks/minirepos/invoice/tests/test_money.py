from invoice.money import format_money, from_cents, parse_money, round_money, to_cents


def test_cents_round_trip():
    assert to_cents(12.34) == 1234
    assert from_cents(1234) == 12.34


def test_round_money():
    assert round_money(3.14159) == 3.14


def test_format_money():
    assert format_money(1234.5) == "$1,234.50"


def test_parse_money():
    assert parse_money("$1,234.50") == 1234.5
