"""The synthetic problem families: each turns a random generator and one primary constant into an instance.

A builder picks the secondary details (function and argument names, test inputs, other constants) from
``rng`` and states every constant explicitly in the docstring, so a model can copy it from the prompt.
Expected outputs come from a plain Python reference, rendered with ``repr``.
"""

from __future__ import annotations

import random
import string
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from coding_framework.problems.problem import Difficulty
from coding_framework.registry import Registry


@dataclass(frozen=True)
class Instance:
    """One generated problem before it becomes a :class:`Problem`: bodies are indented by the caller."""

    entry_point: str
    signature: str
    doc: str
    tests: list[str]
    bodies: list[str]


Builder = Callable[[random.Random, Any], Instance]


@dataclass(frozen=True)
class Family:
    """A parametrised family; ``domain`` lists the values its primary constant can take."""

    name: str
    difficulty: Difficulty
    tags: tuple[str, ...]
    domain: tuple[Any, ...]
    build: Builder


FAMILIES: Registry[Family] = Registry("synthetic family", "families")


def register_family(
    name: str, difficulty: Difficulty, tags: Sequence[str], domain: Sequence[Any]
) -> Callable[[Builder], Builder]:
    """Register the decorated builder as family ``name``; a name can be registered once."""

    def wrap(build: Builder) -> Builder:
        if name not in FAMILIES or FAMILIES[name].build is not build:  # re-importing a module is a no-op
            FAMILIES.add(name, Family(name, difficulty, tuple(tags), tuple(domain), build))
        return build

    return wrap


def get_family(name: str) -> Family:
    """The registered family called ``name``; the error lists the valid names."""
    return FAMILIES.resolve(name)


def _code(text: str) -> str:
    """A multi-line function body written as an indented triple-quoted string."""
    return textwrap.dedent(text).strip("\n")


def _asserts(name: str, fn: Callable[..., Any], cases: Sequence[tuple[Any, ...]]) -> list[str]:
    """One assert per case, expected from ``fn``; predicates: ``assert f(x)`` or ``assert not f(x)``."""
    out = []
    for args in cases:
        call, expected = f"{name}({', '.join(map(repr, args))})", fn(*args)
        if isinstance(expected, bool):
            out.append(f"assert {call}" if expected else f"assert not {call}")
        else:
            out.append(f"assert {call} == {expected!r}")
    return out


def _int_list(rng: random.Random, lo: int = 1, hi: int = 6, span: int = 20) -> list[int]:
    return [rng.randint(-span, span) for _ in range(rng.randint(lo, hi))]


def _list_cases(rng: random.Random, extra: Sequence[list[int]] = ()) -> list[tuple[Any, ...]]:
    """Two examples, the empty list, the given edge cases and two more random lists."""
    lists = [_int_list(rng, 2, 5), _int_list(rng, 2, 5), [], *extra, _int_list(rng), _int_list(rng, 4, 8)]
    return [(x,) for x in lists]


def _word(rng: random.Random, alphabet: str = string.ascii_lowercase, lo: int = 1, hi: int = 7) -> str:
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(lo, hi)))


def _sentence(rng: random.Random, lo: int = 2, hi: int = 5) -> str:
    return " ".join(_word(rng) for _ in range(rng.randint(lo, hi)))


_LIST_ARGS = ("nums", "values", "xs", "items", "numbers", "data")
_STR_ARGS = ("s", "text", "word", "line", "string")


@register_family("add_constant", "easy", ["lists", "arithmetic"], range(1, 61))
def _add_constant(rng: random.Random, k: int) -> Instance:
    name = rng.choice([f"add_{k}", f"add_{k}_to_each", f"increment_by_{k}", f"shift_up_by_{k}"])
    p = rng.choice(_LIST_ARGS)
    return Instance(
        name,
        f"def {name}({p}: list[int]) -> list[int]:",
        f"Return a new list with {k} added to every element of {p}.",
        _asserts(name, lambda xs: [x + k for x in xs], _list_cases(rng, [[-k, 0]])),
        [f"return [x + {k} for x in {p}]", f"return list(map(lambda x: x + {k}, {p}))"],
    )


@register_family("multiply_constant", "easy", ["lists", "arithmetic"], range(2, 41))
def _multiply_constant(rng: random.Random, k: int) -> Instance:
    name = rng.choice([f"multiply_by_{k}", f"times_{k}", f"scale_by_{k}", f"each_times_{k}"])
    p = rng.choice(_LIST_ARGS)
    return Instance(
        name,
        f"def {name}({p}: list[int]) -> list[int]:",
        f"Return a new list with every element of {p} multiplied by {k}.",
        _asserts(name, lambda xs: [x * k for x in xs], _list_cases(rng, [[0, 1, -1]])),
        [
            f"return [x * {k} for x in {p}]",
            _code(f"""
                out = []
                for x in {p}:
                    out.append({k} * x)
                return out
            """),
        ],
    )


@register_family("count_char", "easy", ["strings", "counting"], string.ascii_lowercase + string.digits)
def _count_char(rng: random.Random, c: str) -> Instance:
    name = rng.choice(["count_char", f"count_{c}s" if c.isalpha() else f"count_digit_{c}", "occurrences"])
    p = rng.choice(_STR_ARGS)
    alphabet = c * 3 + "".join(rng.sample(string.ascii_lowercase + string.digits, 4))
    words = [_word(rng, alphabet, 3, 8), _word(rng, alphabet, 3, 8), "", c * 3, _word(rng, alphabet, 5, 12)]
    return Instance(
        name,
        f"def {name}({p}: str) -> int:",
        f'Return how many times the character "{c}" occurs in {p}.',
        _asserts(name, lambda s: s.count(c), [(w,) for w in words]),
        [f"return {p}.count({c!r})", f"return sum(1 for ch in {p} if ch == {c!r})"],
    )


@register_family("divisible_by", "easy", ["math", "predicates"], range(2, 51))
def _divisible_by(rng: random.Random, k: int) -> Instance:
    name = rng.choice([f"divisible_by_{k}", f"is_multiple_of_{k}", f"is_divisible_by_{k}"])
    p = rng.choice(("n", "x", "value", "number"))
    numbers = [k * rng.randint(2, 9), k * rng.randint(2, 9) + rng.randint(1, k - 1), 0, -k, k + 1, k]
    return Instance(
        name,
        f"def {name}({p}: int) -> bool:",
        f"Return True if {p} is divisible by {k}, otherwise False.",
        _asserts(name, lambda n: n % k == 0, [(n,) for n in numbers]),
        [f"return {p} % {k} == 0", f"return {p} == ({p} // {k}) * {k}"],
    )


@register_family("filter_greater", "easy", ["lists", "filtering"], range(-20, 41))
def _filter_greater(rng: random.Random, t: int) -> Instance:
    label = f"minus_{-t}" if t < 0 else str(t)
    name = rng.choice([f"greater_than_{label}", f"keep_above_{label}", f"filter_over_{label}"])
    p = rng.choice(_LIST_ARGS)
    cases = [(sorted(rng.sample(range(t - 10, t + 11), 5)),), (_int_list(rng, 3, 6, 40),), ([],), ([t, t],)]
    cases += [([t + 1, t - 1],), (_int_list(rng, 4, 8, 50),)]
    return Instance(
        name,
        f"def {name}({p}: list[int]) -> list[int]:",
        f"Return the elements of {p} that are strictly greater than {t}, in their original order.",
        _asserts(name, lambda xs: [x for x in xs if x > t], cases),
        [f"return [x for x in {p} if x > {t}]", f"return list(filter(lambda x: x > {t}, {p}))"],
    )


@register_family("repeat_string", "easy", ["strings"], range(2, 21))
def _repeat_string(rng: random.Random, k: int) -> Instance:
    name = rng.choice([f"repeat_{k}_times", f"repeat{k}", f"copies_{k}"])
    p = rng.choice(_STR_ARGS)
    words = [_word(rng, lo=1, hi=3), _word(rng, lo=2, hi=4), "", _word(rng, lo=1, hi=1), "ab c"]
    return Instance(
        name,
        f"def {name}({p}: str) -> str:",
        f"Return {p} repeated {k} times, with nothing in between.",
        _asserts(name, lambda s: s * k, [(w,) for w in words]),
        [f"return {p} * {k}", f'return "".join([{p}] * {k})'],
    )


@register_family("replace_char", "easy", ["strings"], string.ascii_lowercase)
def _replace_char(rng: random.Random, a: str) -> Instance:
    b = rng.choice([ch for ch in string.ascii_lowercase + "*#-_" if ch != a])
    name = rng.choice(["replace_char", f"replace_{a}", f"swap_{a}_out"])
    p = rng.choice(_STR_ARGS)
    alphabet = a * 3 + "".join(rng.sample(string.ascii_lowercase, 4))
    words = [_word(rng, alphabet, 3, 8), _word(rng, alphabet, 3, 8), "", a * 2 + b, _sentence(rng)]
    return Instance(
        name,
        f"def {name}({p}: str) -> str:",
        f'Return {p} with every "{a}" replaced by "{b}".',
        _asserts(name, lambda s: s.replace(a, b), [(w,) for w in words]),
        [f"return {p}.replace({a!r}, {b!r})", f'return "".join({b!r} if ch == {a!r} else ch for ch in {p})'],
    )


@register_family("clip_range", "medium", ["lists", "arithmetic"], range(-30, 31))
def _clip_range(rng: random.Random, lo: int) -> Instance:
    hi = lo + rng.randint(1, 20)
    name = rng.choice(["clip", "clamp_all", "clip_values", "bound_values"])
    p = rng.choice(_LIST_ARGS)
    cases = [(sorted(rng.sample(range(lo - 10, hi + 11), 5)),), (_int_list(rng, 3, 6, 40),), ([],)]
    cases += [([lo - 1, lo, hi, hi + 1],), (_int_list(rng, 4, 8, 50),)]
    return Instance(
        name,
        f"def {name}({p}: list[int]) -> list[int]:",
        f"Return a new list where every element of {p} below {lo} becomes {lo}\n"
        f"and every element above {hi} becomes {hi}.",
        _asserts(name, lambda xs: [min(max(x, lo), hi) for x in xs], cases),
        [
            f"return [min(max(x, {lo}), {hi}) for x in {p}]",
            _code(f"""
                out = []
                for x in {p}:
                    if x < {lo}:
                        x = {lo}
                    elif x > {hi}:
                        x = {hi}
                    out.append(x)
                return out
            """),
        ],
    )


_SEPARATORS = (
    "-",
    "_",
    ", ",
    " | ",
    "+",
    "/",
    "::",
    "*",
    ".",
    "~",
    "; ",
    "#",
    "->",
    "=",
    "..",
    "&",
    " and ",
    "|",
)


@register_family("reverse_words_join", "medium", ["strings"], _SEPARATORS)
def _reverse_words_join(rng: random.Random, sep: str) -> Instance:
    name = rng.choice(["reverse_words", "join_reversed", "backwards_words"])
    p = rng.choice((*_STR_ARGS, "sentence"))
    sentences = [_sentence(rng), _sentence(rng), "", _word(rng), f"  {_sentence(rng, 2, 3)}  "]
    return Instance(
        name,
        f"def {name}({p}: str) -> str:",
        f'Split {p} into whitespace-separated words and return them in reverse order\njoined by "{sep}".',
        _asserts(name, lambda s: sep.join(reversed(s.split())), [(s,) for s in sentences]),
        [
            f"return {sep!r}.join(reversed({p}.split()))",
            _code(f"""
                words = {p}.split()
                return {sep!r}.join(words[::-1])
            """),
        ],
    )


@register_family("sum_multiples_below", "medium", ["math", "loops"], range(2, 41))
def _sum_multiples_below(rng: random.Random, k: int) -> Instance:
    name = rng.choice([f"sum_multiples_of_{k}", f"sum_of_{k}s_below", "sum_multiples_below"])
    p = rng.choice(("n", "limit", "bound"))
    numbers = [rng.randint(3 * k, 10 * k), rng.randint(k + 2, 5 * k), 0, 1, k, k + 1, rng.randint(100, 400)]
    return Instance(
        name,
        f"def {name}({p}: int) -> int:",
        f"Return the sum of all non-negative multiples of {k} that are smaller than {p}.",
        _asserts(name, lambda n: sum(range(0, n, k)), [(n,) for n in numbers]),
        [
            f"return sum(range(0, {p}, {k}))",
            _code(f"""
                total = 0
                for x in range({p}):
                    if x % {k} == 0:
                        total += x
                return total
            """),
            _code(f"""
                m = max({p} - 1, 0) // {k}
                return {k} * m * (m + 1) // 2
            """),
        ],
    )


@register_family("modulo_each", "medium", ["lists", "arithmetic"], range(2, 51))
def _modulo_each(rng: random.Random, k: int) -> Instance:
    name = rng.choice([f"mod_{k}", f"remainders_mod_{k}", f"each_mod_{k}"])
    p = rng.choice(_LIST_ARGS)
    return Instance(
        name,
        f"def {name}({p}: list[int]) -> list[int]:",
        f"Return the remainder of every element of {p} divided by {k}, using Python's %\n"
        f"(results lie in 0..{k - 1}, also for negative elements).",
        _asserts(name, lambda xs: [x % k for x in xs], _list_cases(rng, [[k, -1, 0]])),
        [f"return [x % {k} for x in {p}]", f"return [x - (x // {k}) * {k} for x in {p}]"],
    )


@register_family("pad_left", "medium", ["strings", "formatting"], range(3, 31))
def _pad_left(rng: random.Random, width: int) -> Instance:
    fill = rng.choice("*#.0-_~")
    name = rng.choice([f"pad_to_{width}", "pad_left", f"right_align_{width}"])
    p = rng.choice(_STR_ARGS)
    words = [_word(rng, lo=1, hi=width - 1), _word(rng, lo=1, hi=width), "", "x" * width, "y" * (width + 2)]
    return Instance(
        name,
        f"def {name}({p}: str) -> str:",
        f'Return {p} padded on the left with "{fill}" to a length of {width}.\n'
        f"Strings of length {width} or more are returned unchanged.",
        _asserts(name, lambda s: s.rjust(width, fill), [(w,) for w in words]),
        [f"return {p}.rjust({width}, {fill!r})", f"return {fill!r} * max(0, {width} - len({p})) + {p}"],
    )


@register_family("caesar_shift", "hard", ["strings", "encoding"], range(1, 26))
def _caesar_shift(rng: random.Random, k: int) -> Instance:
    name = rng.choice([f"shift_letters_{k}", f"caesar_{k}", f"rotate_letters_by_{k}"])
    p = rng.choice((*_STR_ARGS, "message"))

    def shift(s: str) -> str:
        return "".join(chr((ord(ch) - 97 + k) % 26 + 97) if "a" <= ch <= "z" else ch for ch in s)

    words = [_word(rng, lo=3, hi=6), _sentence(rng, 2, 3), "", "xyz", _sentence(rng, 3, 5)]
    return Instance(
        name,
        f"def {name}({p}: str) -> str:",
        f"Shift every lowercase letter of {p} forward by {k} places in the alphabet,\n"
        "wrapping from z back to a. Other characters stay unchanged.",
        _asserts(name, shift, [(w,) for w in words]),
        [
            f"return ''.join(chr((ord(ch) - 97 + {k}) % 26 + 97) if 'a' <= ch <= 'z' else ch for ch in {p})",
            _code(f"""
                letters = "abcdefghijklmnopqrstuvwxyz"
                shifted = letters[{k}:] + letters[:{k}]
                return {p}.translate(str.maketrans(letters, shifted))
            """),
        ],
    )


@register_family("chunk_sums", "hard", ["lists", "slicing"], range(2, 26))
def _chunk_sums(rng: random.Random, k: int) -> Instance:
    name = rng.choice([f"chunk_sums_{k}", f"sum_groups_of_{k}", "block_sums"])
    p = rng.choice(_LIST_ARGS)
    lists = [_int_list(rng, k + 1, 2 * k + 1, 9), _int_list(rng, 2 * k, 3 * k, 9), [], [5] * k]
    lists += [_int_list(rng, 1, k - 1, 9), _int_list(rng, 1, 3 * k, 9)]
    return Instance(
        name,
        f"def {name}({p}: list[int]) -> list[int]:",
        f"Split {p} into consecutive chunks of {k} elements (the last chunk may be\n"
        "shorter) and return the list of the chunk sums.",
        _asserts(name, lambda xs: [sum(xs[i : i + k]) for i in range(0, len(xs), k)], [(x,) for x in lists]),
        [
            f"return [sum({p}[i : i + {k}]) for i in range(0, len({p}), {k})]",
            _code(f"""
                out = []
                for i, x in enumerate({p}):
                    if i % {k} == 0:
                        out.append(0)
                    out[-1] += x
                return out
            """),
        ],
    )


_WORDS = ("Fizz", "Buzz", "Bang", "Ping", "Pong", "Zap", "Boom", "Woof", "Hop", "Tick")


@register_family("fizz_word", "hard", ["loops", "strings", "math"], range(2, 31))
def _fizz_word(rng: random.Random, k: int) -> Instance:
    word = rng.choice(_WORDS)
    name = rng.choice([f"{word.lower()}_every_{k}", f"count_with_{word.lower()}", "fizz_list"])
    p = rng.choice(("n", "count", "limit"))

    def reference(n: int) -> list[str]:
        return [word if i % k == 0 else str(i) for i in range(1, n + 1)]

    numbers = [k + rng.randint(1, 3), 2 * k + rng.randint(0, 3), 0, 1, k]
    return Instance(
        name,
        f"def {name}({p}: int) -> list[str]:",
        f'Return a list of strings for the numbers 1 to {p}: multiples of {k} become\n"{word}",'
        " every other number becomes its decimal string.",
        _asserts(name, reference, [(n,) for n in numbers]),
        [
            f"return [{word!r} if i % {k} == 0 else str(i) for i in range(1, {p} + 1)]",
            _code(f"""
                out = []
                for i in range(1, {p} + 1):
                    out.append(str(i) if i % {k} else {word!r})
                return out
            """),
        ],
    )
