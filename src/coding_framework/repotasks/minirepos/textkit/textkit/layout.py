"""Fitting text to a width: truncation, wrapping, slugs and alignment."""

from textkit.chars import center, pad_left, pad_right
from textkit.words import tokenize


def truncate(text: str, width: int, suffix: str = "...") -> str:
    """`text` cut to at most `width` characters, ending in `suffix` when it was cut."""
    if width < len(suffix):
        raise ValueError("width is shorter than the suffix")
    if len(text) <= width:
        return text
    return text[: width - len(suffix)] + suffix


def wrap(text: str, width: int = 20) -> list[str]:
    """Greedy word wrap: lines of at most `width` characters, except a single longer word."""
    if width < 1:
        raise ValueError("width must be positive")
    lines = []
    current = ""
    for word in text.split():
        if not current:
            current = word
        elif len(current) + 1 + len(word) <= width:
            current += " " + word
        else:
            lines.append(current)
            current = word
    if current:
        lines.append(current)
    return lines


def slugify(text: str, sep: str = "-", max_len: int = 0) -> str:
    """A URL slug: lowercase words without apostrophes joined by `sep`, cut to `max_len` when positive."""
    words = [word.replace("'", "") for word in tokenize(text)]
    slug = sep.join(word for word in words if word)
    if max_len > 0 and len(slug) > max_len:
        slug = slug[:max_len].rstrip(sep)
    return slug


def align(text: str, width: int, how: str = "left", fill: str = " ") -> str:
    """`text` padded to `width`: "left" pads on the right, "right" on the left, "center" on both."""
    if how == "left":
        return pad_right(text, width, fill)
    if how == "right":
        return pad_left(text, width, fill)
    if how == "center":
        return center(text, width, fill)
    raise ValueError(f"unknown alignment: {how}")
