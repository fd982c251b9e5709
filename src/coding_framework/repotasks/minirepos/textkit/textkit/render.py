"""Rendering text: tables, one-line summaries and framed boxes, built from the layout and word helpers."""

from textkit.layout import align, truncate, wrap
from textkit.words import top_words, word_count


def format_table(rows: list[list[str]], widths: list[int], how: str = "left") -> list[str]:
    """One line per row: each cell truncated and aligned to its column's width, joined by " | "."""
    lines = []
    for row in rows:
        if len(row) != len(widths):
            raise ValueError("a row has a different number of cells than there are widths")
        cells = [align(truncate(cell, widths[i]), widths[i], how) for i, cell in enumerate(row)]
        lines.append(" | ".join(cells).rstrip())
    return lines


def summary(text: str, n: int = 2) -> str:
    """The word count and the `n` most frequent words, as "5 words; top: a:2, b:1"."""
    pairs = [f"{word}:{count}" for word, count in top_words(text, n)]
    return f"{word_count(text)} words; top: " + ", ".join(pairs)


def boxed(text: str, width: int = 20) -> list[str]:
    """`text` wrapped to `width` inside a frame of "+--+" borders and "| " ... " |" sides."""
    lines = wrap(text, width)
    inner = max([width, *(len(line) for line in lines)])
    border = "+" + "-" * (inner + 2) + "+"
    body = ["| " + align(line, inner) + " |" for line in lines]
    return [border, *body, border]
