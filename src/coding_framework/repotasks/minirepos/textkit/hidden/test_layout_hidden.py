import pytest
from textkit.layout import align, slugify, truncate, wrap


def test_truncate_fits_exactly():
    assert truncate("hello", 5) == "hello"


def test_truncate_cuts_with_default_suffix():
    assert truncate("abcdefghij", 6) == "abc..."


def test_truncate_custom_suffix():
    assert truncate("abcdef", 4, "~") == "abc~"


def test_truncate_width_equal_to_suffix():
    assert truncate("abcdef", 3) == "..."


def test_truncate_width_below_suffix_raises():
    with pytest.raises(ValueError):
        truncate("abc", 2)


def test_wrap_default_width():
    assert wrap("aaaa bbbb cccc dddd eeee") == ["aaaa bbbb cccc dddd", "eeee"]


def test_wrap_default_width_boundary():
    assert wrap("aaaaaaaaa bbbbbbbbbb") == ["aaaaaaaaa bbbbbbbbbb"]
    assert wrap("aaaaaaaaaa bbbbbbbbbb") == ["aaaaaaaaaa", "bbbbbbbbbb"]


def test_wrap_exact_fit():
    assert wrap("ab cd", 5) == ["ab cd"]


def test_wrap_one_over():
    assert wrap("ab cde", 5) == ["ab", "cde"]


def test_wrap_long_word_alone():
    assert wrap("abcdefgh ij", 4) == ["abcdefgh", "ij"]


def test_wrap_empty():
    assert wrap("") == []
    assert wrap("   ", 3) == []


def test_wrap_width_one():
    assert wrap("a b", 1) == ["a", "b"]


def test_wrap_zero_width_raises():
    with pytest.raises(ValueError):
        wrap("a b", 0)


def test_slugify_drops_apostrophes():
    assert slugify("Don't Stop") == "dont-stop"


def test_slugify_custom_separator():
    assert slugify("Big Red Dog", "_") == "big_red_dog"


def test_slugify_max_len():
    assert slugify("hello big world", max_len=9) == "hello-big"


def test_slugify_max_len_strips_trailing_separator():
    assert slugify("hello big world", max_len=6) == "hello"


def test_slugify_max_len_one():
    assert slugify("abc", max_len=1) == "a"


def test_slugify_no_limit_by_default():
    assert slugify("one two three four five") == "one-two-three-four-five"


def test_slugify_lone_apostrophe():
    assert slugify("rock ' roll") == "rock-roll"


def test_align_left_by_default():
    assert align("ab", 4) == "ab  "


def test_align_right_with_fill():
    assert align("7", 3, "right", "0") == "007"


def test_align_center():
    assert align("ab", 5, "center") == " ab  "


def test_align_unknown_raises():
    with pytest.raises(ValueError):
        align("ab", 4, "middle")
