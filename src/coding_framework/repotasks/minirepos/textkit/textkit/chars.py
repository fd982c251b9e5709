"""Character-level helpers: vowels and padding a string to a width."""

VOWELS = "aeiou"


def is_vowel(ch: str) -> bool:
    """Whether `ch`, a single character, is a vowel (either case)."""
    if len(ch) != 1:
        raise ValueError("expected a single character")
    return ch.lower() in VOWELS


def count_vowels(text: str) -> int:
    """The number of vowels in `text`."""
    total = 0
    for ch in text:
        if is_vowel(ch):
            total += 1
    return total


def pad_left(text: str, width: int, fill: str = " ") -> str:
    """`text` with `fill` added on the left up to `width` characters; longer text is returned as is."""
    if len(fill) != 1:
        raise ValueError("fill must be a single character")
    return fill * (width - len(text)) + text


def pad_right(text: str, width: int, fill: str = " ") -> str:
    """`text` with `fill` added on the right up to `width` characters; longer text is returned as is."""
    if len(fill) != 1:
        raise ValueError("fill must be a single character")
    return text + fill * (width - len(text))


def center(text: str, width: int, fill: str = " ") -> str:
    """`text` centred in `width` characters; an odd leftover goes to the right."""
    left = (width - len(text)) // 2
    return pad_right(pad_left(text, len(text) + left, fill), width, fill)
