"""Stronger tests by differential testing: inputs near the tests' own, expected outputs from the reference.

For an ``asserts`` problem, each test of the form ``assert f(args) == expected`` with literal arguments
yields new calls, each changing one argument (an int plus or minus one, negated or zero, a string or list
reversed, shortened or grown, a bool flipped). The first reference runs every new call twice, in the
sandbox, printing the results; a call is kept when both runs printed the same literal (no floats, no
exception), so the reference is deterministic on it. The kept calls become new asserts, and the
strengthened problem is kept only when every reference still passes it.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Iterator, Sequence
from typing import Any

from coding_framework.grading import Grader
from coding_framework.problems import Problem

_MARK = "@@cf-probe@@"
_PROBE_FN = "_cf_probe"


def _variants(value: Any) -> Iterator[Any]:
    if isinstance(value, bool):
        yield not value
    elif isinstance(value, int):
        yield from dict.fromkeys((value + 1, value - 1, -value, 0))
    elif isinstance(value, str) and value:
        yield from (value[::-1], value[1:], value + value[0])
    elif isinstance(value, list | tuple) and value:
        kind = type(value)
        yield from (kind(reversed(value)), kind(value[:-1]), kind([*value, value[0]]))


def _test_calls(problem: Problem) -> list[tuple[list[Any], list[tuple[str, Any]]]]:
    """Literal (positional args, keyword args) of the tests' ``assert f(...) == y`` calls."""
    calls = []
    for node in ast.parse(problem.test_code).body:
        if not (isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare)):
            continue
        call = node.test.left
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
            continue
        if call.func.id != problem.entry_point or any(k.arg is None for k in call.keywords):
            continue
        try:
            args = [ast.literal_eval(a) for a in call.args]
            kwargs = [(k.arg or "", ast.literal_eval(k.value)) for k in call.keywords]
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        calls.append((args, kwargs))
    return calls


def candidate_calls(problem: Problem, limit: int, seed: int = 0) -> list[str]:
    """Up to ``limit`` new call expressions near the tests' calls, seeded per task; none already tested."""
    if problem.test_format != "asserts":
        return []
    try:
        seen_calls = _test_calls(problem)
    except SyntaxError:
        return []
    existing = {_call(problem.entry_point, a, k) for a, k in seen_calls}
    found: dict[str, None] = {}
    for args, kwargs in seen_calls:
        for i, value in enumerate(args):
            for new in _variants(value):
                found[_call(problem.entry_point, [*args[:i], new, *args[i + 1 :]], kwargs)] = None
    pool = [c for c in found if c not in existing]
    rng = random.Random(f"strengthen:{seed}:{problem.task_id}")
    return sorted(rng.sample(pool, min(limit, len(pool))), key=pool.index)


def _call(name: str, args: Sequence[Any], kwargs: Sequence[tuple[str, Any]]) -> str:
    parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs]
    return f"{name}({', '.join(parts)})"


def _probe(problem: Problem, calls: Sequence[str]) -> str:
    """The first reference, then each call's result printed as ``MARK index repr`` (or nothing on error)."""
    lines = [problem.solutions[0], "", f"def {_PROBE_FN}():"]
    for i, call in enumerate(calls):
        lines += [
            "    try:",
            f"        print({_MARK!r}, {i}, repr({call}), flush=True)",
            "    except Exception:",
            "        pass",
        ]
    lines += ["    return None", f"{_PROBE_FN}()", ""]
    return "\n".join(lines)


def _outputs(stdout: str) -> dict[int, str]:
    out = {}
    for line in stdout.splitlines():
        head, _, rest = line.partition(" ")
        index, _, text = rest.partition(" ")
        if head == _MARK and index.isdigit():
            out[int(index)] = text
    return out


def _usable(text: str) -> bool:
    """A literal result without floats (exact comparison of floats would make brittle tests)."""
    try:
        tree = ast.parse(text, mode="eval")
        ast.literal_eval(tree)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return not any(
        isinstance(n, ast.Constant) and isinstance(n.value, float | complex) for n in ast.walk(tree)
    )


def strengthen(
    problems: Sequence[Problem],
    grader: Grader,
    per_problem: int = 8,
    seed: int = 0,
    progress: bool | str = False,
) -> list[Problem]:
    """Each problem with differential asserts added (input order); unchanged where none could be added."""
    plans = [(p, candidate_calls(p, per_problem, seed)) for p in problems if p.solutions]
    plans = [(p, calls) for p, calls in plans if calls]
    probes = [(p, _probe(p, calls)) for p, calls in plans for _ in range(2)]
    runs = grader.grade_many(probes, progress=progress)
    grown: dict[str, Problem] = {}
    for k, (problem, calls) in enumerate(plans):
        first, second = runs[2 * k], runs[2 * k + 1]
        if first.stdout_truncated or second.stdout_truncated:
            continue
        a, b = _outputs(first.stdout), _outputs(second.stdout)
        asserts = [
            f"assert {call} == {a[i]}"
            for i, call in enumerate(calls)
            if i in a and a[i] == b.get(i) and _usable(a[i])
        ]
        if asserts:
            tests = problem.test_code.rstrip("\n") + "\n" + "\n".join(asserts) + "\n"
            grown[problem.task_id] = problem.model_copy(update={"test_code": tests})
    checks = [(p, s) for p in grown.values() for s in p.solutions]
    failing = {p.task_id for (p, _), r in zip(checks, grader.grade_many(checks), strict=True) if not r.passed}
    return [grown[p.task_id] if p.task_id in grown and p.task_id not in failing else p for p in problems]
