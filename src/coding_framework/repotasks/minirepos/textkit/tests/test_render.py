from textkit.render import boxed, format_table, summary


def test_format_table():
    assert format_table([["a", "b"]], [3, 3]) == ["a   | b"]


def test_summary():
    assert summary("to be or not to be") == "6 words; top: be:2, to:2"


def test_boxed():
    assert boxed("hi there", 8) == ["+----------+", "| hi there |", "+----------+"]
