from datestr.text import format_date, format_long, month_name, parse_date


def test_parse_and_format():
    assert parse_date("2024-03-01") == (2024, 3, 1)
    assert format_date((2024, 3, 1)) == "2024-03-01"


def test_month_name():
    assert month_name(3) == "March"


def test_format_long():
    assert format_long((2024, 3, 1)) == "1 March 2024"
