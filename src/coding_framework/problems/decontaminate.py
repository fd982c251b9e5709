"""Decontamination: drop training problems that are, or paraphrase, a problem the run evaluates on.

Each problem is compared on its statement (the prompt, or the description when it has one), on its
reference solutions and on its tests, with its entry point's name replaced by one fixed token (renaming the
function is the first thing a paraphrase does; in a statement only a name that is an identifier, since
a plain word such as ``lcm`` is also what the statement asks for):

- an exact match after normalisation (a statement's case, whitespace and punctuation dropped; code's
  comments and layout, each string literal kept verbatim, so a regex ``'[A-Z]+'`` is not ``'[a-z]+'``);
- n-gram overlap (``ngram`` words of the statement; ``ngram`` tokens of a solution or of the tests): the
  share of the training problem's n-grams found in one benchmark problem (containment). A reworded first
  sentence leaves the rest of a statement's n-grams, the solution body's and the tests' in place.

Candidates come from MinHash LSH (``datasketch``) over the benchmark problems' n-gram sets, so the pass
scales to large sets; the containment of each candidate is then computed exactly, and that figure is what
a drop reports. n-grams that many benchmark problems share (boilerplate such as "write a function to
find the") do not count, and a text with fewer than ``min_ngrams`` other n-grams is compared only exactly:
short statements and two-line bodies are shared by many unrelated problems.

A mirror or sibling of a benchmark problem (even vs odd, min vs max: the same template, another answer) is
a different task under the default policy ``keep``; ``MIRROR_SETTINGS`` holds each policy's settings,
measured on labelled MBPP pairs.

Text misses the same task told in other words ("find length of the string" vs HumanEval's ``strlen``), so
the pairs that ``behaviour_candidates`` finds are also run against each other's tests
(``evaluation.decontamination``, which holds the grader). The candidates are read off the code, without
running it: each reference takes as many arguments as the other's tests pass, and the tests call with
arguments and expect values of the same kinds (``call_compatible``). On MBPP outside MBPP-test against
HumanEval and MBPP-test that keeps 7% of the pairs and every pair labelled the same task that passes both
ways (benchmarks/grading/decontamination_precision.py).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import io
import math
import re
import tokenize
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from datasketch import MinHash, MinHashLSH

from coding_framework.problems.problem import Problem

__all__ = ["BEHAVIOUR_FORMATS", "MIRROR_SETTINGS", "Contamination", "DecontaminationSettings", "MirrorPolicy",
           "behaviour_candidates", "call_compatible", "candidate_matches", "drops_by_kind",
           "find_contamination"]

_WORD = re.compile(r"[a-z0-9_]+")
_NUM_PERM = 128


@dataclass(frozen=True)
class DecontaminationSettings:
    """``statement_overlap`` and ``solution_overlap``: the containment at or above which a problem is
    contaminated; ``ngram``: the n-gram length in words (statements) and tokens (solutions)."""

    ngram: int = 5
    statement_overlap: float = 0.7
    solution_overlap: float = 1.0
    min_ngrams: int = 6
    common_share: float = 0.01
    """An n-gram found in more than this share of a field's benchmark problems (and in at least 3) is
    boilerplate, not evidence."""

    @classmethod
    def for_mirror_tasks(cls, policy: MirrorPolicy, **overrides: Any) -> DecontaminationSettings:
        """The settings measured for ``policy`` (``MIRROR_SETTINGS``), then the ``overrides`` that are set."""
        given = {k: v for k, v in overrides.items() if v is not None}
        return cls(**(MIRROR_SETTINGS[policy] | given))


MirrorPolicy = Literal["keep", "drop"]
MIRROR_SETTINGS: dict[str, dict[str, Any]] = {
    "keep": {"ngram": 6, "min_ngrams": 10, "statement_overlap": 0.9, "solution_overlap": 1.0},
    "drop": {"ngram": 4, "min_ngrams": 3, "statement_overlap": 0.4, "solution_overlap": 0.8},
}
"""The text check's settings for each mirror-task policy. ``keep`` (a mirror or sibling of a benchmark
problem, even vs odd or cone vs cube, is a different task) is the most precise setting whose recall, with
the behaviour check (``evaluation.decontamination``), is at least 0.95 on 213 pairs of MBPP (outside
MBPP-test) against HumanEval and MBPP-test drawn apart from the detector and labelled by reading
(benchmarks/grading/decontamination_precision.py; n-grams 4-6, minimum 3-10, statement 0.4-0.9, solution
0.5-1.0). ``drop`` counts a mirror as contamination: the best F1 on the older 607 pairs that the text
search itself found (precision 0.72, recall 0.81 there)."""


@dataclass(frozen=True)
class Contamination:
    """Why ``task_id`` was dropped: it matches ``matched`` (a problem of benchmark ``against``) by ``kind``
    (``exact_<field>`` or ``<field>_ngrams``, field ``statement``, ``solution`` or ``tests``; or
    ``behaviour``) with ``overlap`` (the share of its n-grams found there; 1.0 for an exact match and for
    behaviour)."""

    task_id: str
    against: str
    matched: str
    kind: str
    overlap: float

    @property
    def field(self) -> str:
        return self.kind.removeprefix("exact_").removesuffix("_ngrams")

    @property
    def drop_kind(self) -> str:
        """The manifest's kind of drop: ``exact`` (a field equal after normalisation), ``paraphrase``
        (n-gram overlap of a field) or ``behaviour`` (each reference passes the other's tests); a secret is
        ``secret``, from ``problems.secret_scan``."""
        if self.kind.startswith("exact_"):
            return "exact"
        return "behaviour" if self.kind == "behaviour" else "paraphrase"

    def as_dict(self) -> dict[str, object]:
        return {"against": self.against, "task_id": self.matched, "kind": self.kind,
                "overlap": round(self.overlap, 4)}


_FN = "<fn>"
_FIELDS = ("statement", "solution", "tests")


def drops_by_kind(dropped: Iterable[Mapping[str, object]]) -> dict[str, int]:
    """How many drops of each ``kind`` (rows of a manifest's or report's ``dropped``)."""
    return dict(sorted(Counter(str(row["kind"]) for row in dropped).items()))


def statement(problem: Problem) -> str:
    return problem.description or problem.prompt


def words(text: str, entry_point: str = "") -> list[str]:
    """The text's lower-case words, the entry point's name as a fixed token when it is an identifier (holds
    ``_``, a digit or an upper-case letter): a plain word such as ``lcm`` or ``first`` is also what the
    statement means, and replacing it would make "find the lcm" equal "find the gcd"."""
    found = _WORD.findall(text.lower())
    name = entry_point.lower() if _identifier_like(entry_point) else ""
    return [_FN if w == name else w for w in found] if name else found


def _identifier_like(name: str) -> bool:
    return bool(name) and (name != name.lower() or any(c == "_" or c.isdigit() for c in name))


def code_tokens(code: str, entry_point: str = "") -> list[str]:
    """The code's tokens without comments and layout, each string literal verbatim as one token (a regex
    ``'[A-Z]+'`` is not ``'[a-z]+'``), the entry point's name as a fixed token; the raw words when it does
    not tokenize."""
    try:
        out: list[str] = []
        for t in tokenize.generate_tokens(io.StringIO(code).readline):
            if t.type in (tokenize.NAME, tokenize.OP, tokenize.NUMBER, tokenize.STRING):
                out.append(_FN if t.string == entry_point else t.string)
        return out
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return words(code, entry_point)


def shingles(items: Sequence[str], n: int) -> set[str]:
    if len(items) < n:
        return {" ".join(items)} if items else set()
    return {" ".join(items[i : i + n]) for i in range(len(items) - n + 1)}


def _digest(items: Sequence[str]) -> str:
    return hashlib.sha256("\0".join(items).encode()).hexdigest()


@dataclass
class _Index:
    """One field (statements or solutions) of the benchmark problems: exact digests, n-gram sets, LSH."""

    exact: dict[str, tuple[str, str]]
    grams: dict[str, set[str]]
    owner: dict[str, tuple[str, str]]
    lsh: MinHashLSH
    common: set[str]


def _minhash(grams: Iterable[str]) -> MinHash:
    m = MinHash(num_perm=_NUM_PERM, seed=1)
    m.update_batch([g.encode() for g in grams])
    return m


def _index(against: Mapping[str, Sequence[Problem]], field: str, s: DecontaminationSettings) -> _Index:
    index = _Index({}, {}, {}, MinHashLSH(threshold=0.1, num_perm=_NUM_PERM), set())
    for name, problems in against.items():
        for problem in problems:
            for i, items in enumerate(_items(problem, field)):
                if not items:
                    continue
                key = f"{name}\0{problem.task_id}\0{i}"
                index.exact.setdefault(_digest(items), (name, problem.task_id))
                index.grams[key], index.owner[key] = shingles(items, s.ngram), (name, problem.task_id)
    counts = Counter(g for grams in index.grams.values() for g in grams)
    floor = max(3, s.common_share * len(index.grams))
    index.common = {g for g, c in counts.items() if c > floor}
    for key, grams in index.grams.items():
        index.lsh.insert(key, _minhash(grams - index.common or grams))
    return index


def _items(problem: Problem, field: str) -> list[list[str]]:
    if field == "statement":
        return [words(statement(problem), problem.entry_point)]
    if field == "tests":
        return [code_tokens(problem.test_code, problem.entry_point)]
    return [code_tokens(s, problem.entry_point) for s in problem.solutions]


def find_contamination(
    train: Sequence[Problem],
    against: Mapping[str, Sequence[Problem]],
    settings: DecontaminationSettings | None = None,
) -> dict[str, Contamination]:
    """task_id -> why, for each training problem that matches a problem of ``against`` (benchmark name ->
    its problems); the first match found, exact matches before n-gram overlaps."""
    s = settings or DecontaminationSettings()
    thresholds = {"statement": s.statement_overlap, "solution": s.solution_overlap,
                  "tests": s.solution_overlap}
    found: dict[str, Contamination] = {}
    for task_id, matches in candidate_matches(train, against, s).items():
        hit = next((m for m in matches if m.overlap >= thresholds[m.field]), None)
        if hit is not None:
            found[task_id] = hit
    return found


def candidate_matches(
    train: Sequence[Problem],
    against: Mapping[str, Sequence[Problem]],
    settings: DecontaminationSettings | None = None,
) -> dict[str, list[Contamination]]:
    """task_id -> every match of each training problem at any overlap: exact matches first, then per field
    (statement, solution, tests) the best n-gram overlap with each LSH candidate, highest first. The
    thresholds of ``settings`` are not applied (``find_contamination`` applies them)."""
    s = settings or DecontaminationSettings()
    indexes = {field: _index(against, field, s) for field in _FIELDS}
    return {problem.task_id: _matches(problem, indexes, s) for problem in train}


def _matches(problem: Problem, indexes: Mapping[str, _Index],
             s: DecontaminationSettings) -> list[Contamination]:
    out: list[Contamination] = []
    for field in _FIELDS:
        index = indexes[field]
        for items in _items(problem, field):
            if items and (owner := index.exact.get(_digest(items))) is not None:
                out.append(Contamination(problem.task_id, owner[0], owner[1], f"exact_{field}", 1.0))
    for field in _FIELDS:
        index = indexes[field]
        best: dict[tuple[str, str], float] = {}
        for items in _items(problem, field):
            grams = shingles(items, s.ngram) - index.common
            if len(grams) < s.min_ngrams:
                continue
            for key in index.lsh.query(_minhash(grams)):
                share = len(grams & index.grams[key]) / len(grams)
                owner = index.owner[key]
                best[owner] = max(share, best.get(owner, 0.0))
        ranked = sorted(best.items(), key=lambda kv: -kv[1])
        out += [Contamination(problem.task_id, name, task, f"{field}_ngrams", share)
                for (name, task), share in ranked if share > 0]
    return out


BEHAVIOUR_FORMATS = ("asserts", "check_function", "calls")
"""Test formats that call an entry point, so another problem's function can be bound to its name."""
_SEQUENCE = {"list": "sequence", "tuple": "sequence", "set": "sequence"}


@functools.lru_cache(maxsize=4096)
def _signature(solution: str, entry_point: str) -> tuple[int, float] | None:
    """(fewest, most) positional arguments the reference's entry point takes; None when unknown."""
    try:
        tree = ast.parse(solution)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == entry_point:
            args = node.args
            count = len(args.posonlyargs) + len(args.args)
            return count - len(args.defaults), math.inf if args.vararg else count
    return None


def _test_tree(test_code: str, test_format: str, entry_point: str) -> tuple[ast.Module, str] | None:
    """The tests' syntax tree and the name they call the entry point by; None for a format without one."""
    if test_format not in ("asserts", "check_function"):
        return None
    try:
        tree = ast.parse(test_code)
    except SyntaxError:
        return None
    return tree, "candidate" if test_format == "check_function" else entry_point


@functools.lru_cache(maxsize=4096)
def _call_arities(test_code: str, test_format: str, entry_point: str) -> frozenset[int] | None:
    """How many positional arguments the tests pass to the entry point (``candidate`` in a HumanEval
    ``check``); None when unknown (keywords, ``*args``, a ``calls`` spec, or no call found)."""
    parsed = _test_tree(test_code, test_format, entry_point)
    if parsed is None:
        return None
    tree, name = parsed
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name:
            if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
                return None
            found.add(len(node.args))
    return frozenset(found) or None


def _kind(node: ast.expr) -> str | None:
    """A test literal's kind (a list, a tuple and a set are one: a ``sequence``); None when not a literal."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return _SEQUENCE.get(type(value).__name__, type(value).__name__)


Shape = tuple[tuple[str | None, ...], str | None]


@functools.lru_cache(maxsize=4096)
def _call_shapes(test_code: str, test_format: str, entry_point: str) -> frozenset[Shape] | None:
    """The kinds of the arguments and of the expected value of each ``f(...) == expected`` the tests
    assert; None when unknown."""
    parsed = _test_tree(test_code, test_format, entry_point)
    if parsed is None:
        return None
    tree, name = parsed
    found: set[Shape] = set()
    compares = [n for n in ast.walk(tree) if isinstance(n, ast.Compare) and len(n.ops) == 1]
    for node in compares:
        if not isinstance(node.ops[0], ast.Eq | ast.Is):
            continue
        call, expected = node.left, node.comparators[0]
        if not _calls(call, name):
            call, expected = expected, call
        if _calls(call, name):
            assert isinstance(call, ast.Call)
            found.add((tuple(_kind(a) for a in call.args), _kind(expected)))
    return frozenset(found) or None


def _calls(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


def _same_kinds(a: Sequence[str | None], b: Sequence[str | None]) -> bool:
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b, strict=True))


def _shapes_meet(a: frozenset[Shape] | None, b: frozenset[Shape] | None) -> bool:
    if a is None or b is None:
        return True
    return any(_same_kinds(x[0], y[0]) and _same_kinds((x[1],), (y[1],)) for x in a for y in b)


def call_compatible(src: Problem, dst: Problem) -> bool:
    """Whether the two problems' functions could pass each other's tests, by what can be read without
    running anything: each reference takes as many arguments as the other's tests pass, and some assert
    of each calls with arguments of the same kinds (number, bool, str, sequence, dict, None) and expects
    a value of the same kind. True where either side is unknown."""
    for a, b in ((src, dst), (dst, src)):
        sig = _signature(a.solutions[0], a.entry_point) if a.solutions else None
        calls = _call_arities(b.test_code, b.test_format, b.entry_point)
        if sig is not None and calls is not None and not all(sig[0] <= n <= sig[1] for n in calls):
            return False
    return _shapes_meet(_call_shapes(src.test_code, src.test_format, src.entry_point),
                        _call_shapes(dst.test_code, dst.test_format, dst.entry_point))


def behaviour_candidates(
    train: Sequence[Problem], against: Mapping[str, Sequence[Problem]]
) -> list[tuple[Problem, str, Problem]]:
    """(training problem, benchmark name, benchmark problem) for each pair worth running against each
    other's tests: both call an entry point, have a reference solution, and are ``call_compatible``."""
    usable = [p for p in train if p.solutions and p.test_format in BEHAVIOUR_FORMATS]
    bench = [(name, p) for name, problems in against.items() for p in problems
             if p.solutions and p.test_format in BEHAVIOUR_FORMATS]
    return [(problem, name, other) for problem in usable for name, other in bench
            if call_compatible(problem, other)]
