"""The built-in training set: small hand-written Python problems with edge-case tests and references.

The problems live in ``data/builtin/*.yaml``, one file per topic. Each entry gives a ``signature``, a
docstring (``doc``), a plain ``description``, ``tests`` (one assert per line), ``solutions`` (function
bodies, each a genuinely different approach), ``difficulty`` and ``tags``. The prompt is HumanEval style
(signature + docstring with two examples taken from the tests); every reference is the prompt followed
by its body, so it is also a valid ``completion_program``.
"""

from __future__ import annotations

import ast
import textwrap
from functools import cache
from importlib import resources
from typing import Any

import yaml

from coding_framework.problems._io import ProblemLoadError
from coding_framework.problems.problem import Problem

_KEYS = {"name", "signature", "doc", "description", "difficulty", "tags", "tests", "solutions"}


def builtin_problems() -> list[Problem]:
    """All built-in problems, ordered by topic file then position in it."""
    return list(_load_all())


@cache
def _load_all() -> tuple[Problem, ...]:
    folder = resources.files("coding_framework.problems") / "data" / "builtin"
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".yaml")), key=lambda f: f.name)
    problems: list[Problem] = []
    for file in files:
        entries = yaml.safe_load(file.read_text(encoding="utf-8"))
        if not isinstance(entries, list):
            raise ProblemLoadError(f"{file.name}: expected a list of problems")
        problems.extend(builtin_problem(e, f"{file.name}#{i}") for i, e in enumerate(entries))
    return tuple(problems)


def builtin_problem(entry: dict[str, Any], where: str) -> Problem:
    """One YAML entry as a :class:`Problem`; ``where`` names the entry in error messages."""
    if not isinstance(entry, dict) or set(entry) != _KEYS:
        got = sorted(entry) if isinstance(entry, dict) else type(entry).__name__
        raise ProblemLoadError(f"{where}: expected exactly the keys {sorted(_KEYS)}, got {got}")
    name = entry["name"]
    tests = [line.strip() for line in entry["tests"].splitlines() if line.strip()]
    prompt = humaneval_prompt(entry["signature"], entry["doc"], tests)
    try:
        return Problem(
            task_id=f"builtin/{name}",
            prompt=prompt,
            entry_point=name,
            test_code="\n".join(tests) + "\n",
            test_format="asserts",
            solutions=[prompt + textwrap.indent(body, "    ") for body in entry["solutions"]],
            description=" ".join(entry["description"].split()),
            difficulty=entry["difficulty"],
            tags=list(entry["tags"]),
            source="builtin",
            prompt_is_code=True,
        )
    except ValueError as exc:
        raise ProblemLoadError(f"{where} ({name}): {exc}") from exc


def humaneval_prompt(signature: str, doc: str, tests: list[str], examples: int = 2) -> str:
    """``signature`` with a docstring: ``doc``, then up to ``examples`` doctest lines made from the tests."""
    shown = [e for e in map(_doctest, tests) if e is not None][:examples]
    lines = [*doc.strip().splitlines()]
    if shown:
        lines += ["", *shown]
    body = textwrap.indent("\n".join(lines), "    ")
    return f'{signature.strip()}\n    """{body.lstrip()}\n    """\n'


def _doctest(test: str) -> str | None:
    """``assert f(x) == y`` as ``>>> f(x)`` / ``y``.

    ``assert f(x)`` and ``assert not f(x)`` show ``True`` and ``False``."""
    node = ast.parse(test).body[0]
    if not isinstance(node, ast.Assert):
        return None
    expr = node.test
    if isinstance(expr, ast.Compare) and len(expr.ops) == 1 and isinstance(expr.ops[0], ast.Eq):
        call, expected = expr.left, ast.unparse(expr.comparators[0])
    elif isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        call, expected = expr.operand, "False"
    else:
        call, expected = expr, "True"
    if not isinstance(call, ast.Call):
        return None
    return f">>> {ast.unparse(call)}\n{expected}"
