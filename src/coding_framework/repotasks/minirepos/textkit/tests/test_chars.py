from textkit.chars import center, count_vowels, is_vowel, pad_left, pad_right


def test_is_vowel():
    assert is_vowel("a")
    assert not is_vowel("b")


def test_count_vowels():
    assert count_vowels("banana") == 3


def test_padding():
    assert pad_left("7", 3, "0") == "007"
    assert pad_right("ab", 4) == "ab  "


def test_center():
    assert center("hi", 6, "*") == "**hi**"
