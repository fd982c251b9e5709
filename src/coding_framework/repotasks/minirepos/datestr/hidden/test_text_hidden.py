import pytest
from datestr.text import format_date, format_long, month_name, parse_date


def test_parse_date_plain():
    assert parse_date("2024-03-01") == (2024, 3, 1)


def test_parse_date_strips_spaces():
    assert parse_date(" 1999-12-31 ") == (1999, 12, 31)


def test_parse_date_needs_padded_fields():
    with pytest.raises(ValueError):
        parse_date("2024-3-1")
    with pytest.raises(ValueError):
        parse_date("24-03-01")


def test_parse_date_wrong_separator_or_parts():
    with pytest.raises(ValueError):
        parse_date("2024/03/01")
    with pytest.raises(ValueError):
        parse_date("2024-03-01-05")


def test_parse_date_digits_only():
    with pytest.raises(ValueError):
        parse_date("+202-03-01")
    with pytest.raises(ValueError):
        parse_date("abcd-ef-gh")


def test_parse_date_must_exist():
    with pytest.raises(ValueError):
        parse_date("2023-02-29")
    with pytest.raises(ValueError):
        parse_date("2024-13-01")
    with pytest.raises(ValueError):
        parse_date("0000-01-01")


def test_format_date_default_separator():
    assert format_date((2024, 12, 31)) == "2024-12-31"


def test_format_date_pads_with_zeros():
    assert format_date((5, 1, 2)) == "0005-01-02"


def test_format_date_other_separator():
    assert format_date((2024, 3, 1), "/") == "2024/03/01"


def test_month_name_ends_of_year():
    assert month_name(1) == "January"
    assert month_name(12) == "December"


def test_month_name_short():
    assert month_name(9, True) == "Sep"
    assert month_name(5, short=True) == "May"


def test_month_name_bad_month_raises():
    with pytest.raises(ValueError):
        month_name(0)
    with pytest.raises(ValueError):
        month_name(13)


def test_format_long_values():
    assert format_long((2024, 3, 1)) == "1 March 2024"
    assert format_long((1999, 12, 31)) == "31 December 1999"


def test_format_long_invalid_raises():
    with pytest.raises(ValueError):
        format_long((2023, 2, 29))


def test_format_long_short_year():
    assert format_long((800, 12, 31)) == "31 December 800"
    assert format_long((2024, 2, 9)) == "9 February 2024"
