"""Small source mutations of correct programs: the wrong attempts and habits of SFT examples.

Mutations act on tokens (a number, an operator, a keyword), so the mutant keeps the reference's layout
and reads like a plausible slip (an off-by-one, a flipped comparison), not like reformatted code.
"""

from __future__ import annotations

import ast
import io
import random
import re
import tokenize

_OP_SWAPS = {
    "<": "<=",
    "<=": "<",
    ">": ">=",
    ">=": ">",
    "==": "!=",
    "!=": "==",
    "+": "-",
    "-": "+",
    "*": "+",
    "//": "%",
    "%": "//",
    "+=": "-=",
    "-=": "+=",
}
_NAME_SWAPS = {"and": "or", "or": "and", "True": "False", "False": "True", "min": "max", "max": "min"}


def _offsets(code: str) -> list[int]:
    starts, pos = [], 0
    for line in code.splitlines(keepends=True):
        starts.append(pos)
        pos += len(line)
    starts.append(pos)
    return starts


def _candidates(code: str) -> list[tuple[int, int, str]]:
    """(start, end, replacement) for every mutable token outside the first line (the signature)."""
    line_starts = _offsets(code)
    out: list[tuple[int, int, str]] = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    except (tokenize.TokenError, SyntaxError):
        return out
    for tok in tokens:
        (row, col), (erow, ecol) = tok.start, tok.end
        if row == 1 or row != erow:
            continue
        replacement = None
        if tok.type == tokenize.OP:
            replacement = _OP_SWAPS.get(tok.string)
        elif tok.type == tokenize.NAME:
            replacement = _NAME_SWAPS.get(tok.string)
        elif tok.type == tokenize.NUMBER and tok.string.isdigit():
            value = int(tok.string)
            replacement = str(value + 1 if value < 2 else value - 1)
        if replacement is not None:
            start = line_starts[row - 1] + col
            out.append((start, line_starts[erow - 1] + ecol, replacement))
    return out


def mutate(code: str, rng: random.Random) -> str | None:
    """``code`` with one token changed, or None when nothing in it can be mutated."""
    candidates = _candidates(code)
    if not candidates:
        return None
    start, end, replacement = rng.choice(candidates)
    return code[:start] + replacement + code[end:]


_RETURN = re.compile(r"^(?P<indent>[ \t]*)return (?P<value>.+)$", re.MULTILINE)


def print_instead_of_return(code: str) -> str | None:
    """``code`` with every one-line ``return value`` written as ``print(value)``, or None when it has none.

    The habit of script-style code: the function shows its result instead of returning it.
    """
    changed = _RETURN.sub(lambda m: f"{m['indent']}print({m['value']})", code)
    if changed == code:
        return None
    try:
        ast.parse(changed)
    except SyntaxError:  # a return whose value continues on the next line
        return None
    return changed
