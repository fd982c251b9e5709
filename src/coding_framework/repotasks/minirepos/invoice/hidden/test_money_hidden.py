import pytest
from invoice.money import format_money, from_cents, parse_money, round_money, to_cents


def test_to_cents_plain():
    assert to_cents(12.34) == 1234
    assert to_cents(7) == 700


def test_to_cents_half_rounds_up():
    assert to_cents(0.125) == 13


def test_to_cents_negative_half_rounds_away():
    assert to_cents(-0.125) == -13
    assert to_cents(-2.5) == -250


def test_to_cents_zero_and_below_half():
    assert to_cents(0) == 0
    assert to_cents(0.994) == 99


def test_from_cents_positive():
    assert from_cents(250) == 2.5
    assert from_cents(1234) == 12.34


def test_from_cents_rejects_fractions():
    with pytest.raises(TypeError):
        from_cents(2.5)


def test_from_cents_negative_and_zero():
    assert from_cents(-5) == -0.05
    assert from_cents(0) == 0.0


def test_round_money_half_cent():
    assert round_money(1.125) == 1.13


def test_round_money_down():
    assert round_money(1.0049) == 1.0


def test_round_money_negative():
    assert round_money(-3.456) == -3.46


def test_format_money_thousands():
    assert format_money(1234.5) == "$1,234.50"
    assert format_money(1000000) == "$1,000,000.00"


def test_format_money_negative():
    assert format_money(-1234.5) == "-$1,234.50"


def test_format_money_one_cent_negative():
    assert format_money(-0.01) == "-$0.01"


def test_format_money_small_and_zero():
    assert format_money(0.07) == "$0.07"
    assert format_money(0) == "$0.00"


def test_format_money_other_symbol():
    assert format_money(5, "€") == "€5.00"


def test_parse_money_with_symbol_and_commas():
    assert parse_money("$1,234.50") == 1234.5
    assert parse_money("$5") == 5.0


def test_parse_money_negative():
    assert parse_money("-$12.00") == -12.0
    assert parse_money("-12.5") == -12.5


def test_parse_money_plain_number_and_spaces():
    assert parse_money("  7 ") == 7.0


def test_parse_money_rounds_to_cents():
    assert parse_money("$1.239") == 1.24


def test_parse_money_other_symbol():
    assert parse_money("€3.10", "€") == 3.1


def test_parse_money_empty_raises():
    with pytest.raises(ValueError):
        parse_money("$")
    with pytest.raises(ValueError):
        parse_money("")


def test_parse_money_garbage_raises():
    with pytest.raises(ValueError):
        parse_money("abc")
