import pytest
from textkit.words import longest_word, tokenize, top_words, word_count, word_frequencies


def test_tokenize_keeps_digits_and_apostrophes():
    assert tokenize("It's 5 o'clock") == ["it's", "5", "o'clock"]


def test_tokenize_without_lowering():
    assert tokenize("Hi THERE", lower=False) == ["Hi", "THERE"]


def test_tokenize_lowers_by_default():
    assert tokenize("Mixed Case") == ["mixed", "case"]


def test_tokenize_runs_of_separators():
    assert tokenize("a,,b  c") == ["a", "b", "c"]


def test_tokenize_last_word_kept():
    assert tokenize("one two") == ["one", "two"]
    assert tokenize("end") == ["end"]


def test_tokenize_nothing():
    assert tokenize("") == []
    assert tokenize("!? ..") == []


def test_word_count_empty():
    assert word_count("") == 0


def test_word_count_punctuation():
    assert word_count("Hello, world!") == 2


def test_word_count_single():
    assert word_count("word") == 1


def test_word_frequencies_ignores_case():
    assert word_frequencies("The the THE") == {"the": 3}


def test_word_frequencies_empty():
    assert word_frequencies("") == {}


def test_word_frequencies_distinct():
    assert word_frequencies("x y z y") == {"x": 1, "y": 2, "z": 1}


def test_top_words_default_three():
    assert top_words("a a a b b c d") == [("a", 3), ("b", 2), ("c", 1)]


def test_top_words_ties_alphabetical():
    assert top_words("b a c", 2) == [("a", 1), ("b", 1)]


def test_top_words_zero():
    assert top_words("a b c", 0) == []


def test_top_words_more_than_available():
    assert top_words("b b a", 5) == [("b", 2), ("a", 1)]


def test_top_words_negative_raises():
    with pytest.raises(ValueError):
        top_words("a", -1)


def test_longest_word_first_on_tie():
    assert longest_word("cat dog") == "cat"


def test_longest_word_keeps_case():
    assert longest_word("Hello hi") == "Hello"


def test_longest_word_ignores_punctuation():
    assert longest_word("hi!!!! yes") == "yes"


def test_longest_word_empty():
    assert longest_word("") == ""
    assert longest_word("...") == ""
