import pytest
from textkit.chars import center, count_vowels, is_vowel, pad_left, pad_right


def test_is_vowel_both_cases():
    assert is_vowel("e")
    assert is_vowel("U")


def test_is_vowel_rejects_consonants_and_digits():
    assert not is_vowel("y")
    assert not is_vowel("Z")
    assert not is_vowel("1")


def test_is_vowel_empty_string_raises():
    with pytest.raises(ValueError):
        is_vowel("")


def test_is_vowel_two_characters_raises():
    with pytest.raises(ValueError):
        is_vowel("ae")


def test_count_vowels_empty():
    assert count_vowels("") == 0


def test_count_vowels_mixed_case_and_symbols():
    assert count_vowels("AEIOU xyz!") == 5


def test_count_vowels_none_present():
    assert count_vowels("rhythm") == 0


def test_count_vowels_single():
    assert count_vowels("cat") == 1


def test_pad_left_default_fill():
    assert pad_left("ab", 5) == "   ab"


def test_pad_left_custom_fill():
    assert pad_left("42", 6, "0") == "000042"


def test_pad_left_exact_width_unchanged():
    assert pad_left("abc", 3) == "abc"


def test_pad_left_longer_text_unchanged():
    assert pad_left("abcdef", 2, "*") == "abcdef"


def test_pad_left_bad_fill_raises():
    with pytest.raises(ValueError):
        pad_left("a", 4, "ab")
    with pytest.raises(ValueError):
        pad_left("a", 4, "")


def test_pad_right_default_fill():
    assert pad_right("ab", 5) == "ab   "


def test_pad_right_custom_fill():
    assert pad_right("x", 4, ".") == "x..."


def test_pad_right_exact_and_longer_unchanged():
    assert pad_right("abc", 3) == "abc"
    assert pad_right("abcdef", 4) == "abcdef"


def test_pad_right_bad_fill_raises():
    with pytest.raises(ValueError):
        pad_right("a", 4, "--")


def test_center_even_leftover():
    assert center("ab", 6, "-") == "--ab--"


def test_center_odd_leftover_goes_right():
    assert center("ab", 5, "-") == "-ab--"
    assert center("x", 4, ".") == ".x.."


def test_center_default_fill():
    assert center("abc", 7) == "  abc  "


def test_center_one_extra_goes_right():
    assert center("ab", 3, "*") == "ab*"


def test_center_no_room():
    assert center("abc", 3, "*") == "abc"
    assert center("abcd", 2, "*") == "abcd"


def test_center_empty_text():
    assert center("", 4, "=") == "===="
