from textkit.words import longest_word, tokenize, top_words, word_count, word_frequencies


def test_tokenize():
    assert tokenize("Hello, world!") == ["hello", "world"]


def test_word_count():
    assert word_count("one two  three") == 3


def test_frequencies_and_top():
    assert word_frequencies("a b a") == {"a": 2, "b": 1}
    assert top_words("x y x z x y", 2) == [("x", 3), ("y", 2)]


def test_longest_word():
    assert longest_word("a quick fox") == "quick"
