"""Converting between identifier styles and title case."""

MINOR_WORDS = ("a", "an", "and", "in", "of", "or", "the")


def split_identifier(name: str) -> list[str]:
    """Lowercase parts of a snake_case, kebab-case or camelCase name; each capital starts a part."""
    parts = []
    current = ""
    for ch in name:
        if ch in "_-":
            if current:
                parts.append(current)
            current = ""
        elif ch.isupper():
            if current:
                parts.append(current)
            current = ch.lower()
        else:
            current += ch
    if current:
        parts.append(current)
    return parts


def to_snake(name: str, sep: str = "_") -> str:
    """`name` in snake_case (or joined by another `sep`)."""
    parts = split_identifier(name)
    return sep.join(parts)


def to_camel(name: str, upper_first: bool = False) -> str:
    """`name` in camelCase, or PascalCase when `upper_first`."""
    parts = split_identifier(name)
    if not parts:
        return ""
    head = parts[0].capitalize() if upper_first else parts[0]
    return head + "".join(part.capitalize() for part in parts[1:])


def title_case(text: str, minor: tuple[str, ...] = MINOR_WORDS) -> str:
    """Each word capitalized, except `minor` words after the first, which are lowercased."""
    out = []
    for index, word in enumerate(text.split()):
        lower = word.lower()
        if index > 0 and lower in minor:
            out.append(lower)
        else:
            out.append(lower.capitalize())
    return " ".join(out)
