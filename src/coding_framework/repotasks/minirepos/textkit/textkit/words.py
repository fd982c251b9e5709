"""Splitting text into words and counting them."""


def tokenize(text: str, lower: bool = True) -> list[str]:
    """Words of `text`: runs of letters, digits and apostrophes; anything else separates words."""
    words = []
    current = ""
    for ch in text:
        if ch.isalnum() or ch == "'":
            current += ch
        elif current:
            words.append(current)
            current = ""
    if current:
        words.append(current)
    if lower:
        return [word.lower() for word in words]
    return words


def word_count(text: str) -> int:
    """The number of words in `text`."""
    words = tokenize(text)
    return len(words)


def word_frequencies(text: str) -> dict[str, int]:
    """How often each lowercased word occurs in `text`."""
    counts: dict[str, int] = {}
    for word in tokenize(text):
        counts[word] = counts.get(word, 0) + 1
    return counts


def top_words(text: str, n: int = 3) -> list[tuple[str, int]]:
    """The `n` most frequent words with their counts, most frequent first, ties in alphabetical order."""
    if n < 0:
        raise ValueError("n must not be negative")
    counts = word_frequencies(text)
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ranked[:n]


def longest_word(text: str) -> str:
    """The longest word of `text` as written (the first one on ties); "" when there is none."""
    best = ""
    for word in tokenize(text, False):
        if len(word) > len(best):
            best = word
    return best
