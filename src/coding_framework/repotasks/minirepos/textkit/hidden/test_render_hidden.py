import pytest
from textkit.render import boxed, format_table, summary


def test_format_table_truncates_long_cells():
    assert format_table([["abcdefgh", "xyz"]], [5, 3]) == ["ab... | xyz"]


def test_format_table_right_aligned():
    assert format_table([["a", "bb"]], [3, 3], "right") == ["  a |  bb"]


def test_format_table_centered():
    assert format_table([["a", "b"]], [3, 3], "center") == [" a  |  b"]


def test_format_table_several_rows():
    assert format_table([["ab", "c"], ["d", "ef"]], [3, 3]) == ["ab  | c", "d   | ef"]


def test_format_table_no_rows():
    assert format_table([], [3]) == []


def test_format_table_row_length_mismatch_raises():
    with pytest.raises(ValueError):
        format_table([["a", "b"]], [3])


def test_summary_default_two_words():
    assert summary("the cat and the hat and the bat") == "8 words; top: the:3, and:2"


def test_summary_one_word():
    assert summary("Go go GO stop", 1) == "4 words; top: go:3"


def test_summary_empty():
    assert summary("") == "0 words; top: "


def test_summary_ties_alphabetical():
    assert summary("b a", 3) == "2 words; top: a:1, b:1"


def test_boxed_default_width():
    expected_border = "+" + "-" * 22 + "+"
    assert boxed("hello") == [expected_border, "| hello" + " " * 15 + " |", expected_border]


def test_boxed_wraps_lines():
    assert boxed("ab cd ef", 5) == ["+-------+", "| ab cd |", "| ef    |", "+-------+"]


def test_boxed_long_word_widens():
    assert boxed("abcdefghij", 4) == ["+------------+", "| abcdefghij |", "+------------+"]


def test_boxed_empty_text():
    assert boxed("", 3) == ["+-----+", "+-----+"]
