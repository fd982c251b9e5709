from textkit.layout import align, slugify, truncate, wrap


def test_truncate():
    assert truncate("hello world", 8) == "hello..."


def test_wrap():
    assert wrap("the quick brown fox", 10) == ["the quick", "brown fox"]


def test_slugify():
    assert slugify("Hello, World!") == "hello-world"


def test_align():
    assert align("ab", 4, "right") == "  ab"
