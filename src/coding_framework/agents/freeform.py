"""Problems given as free text: a statement and no tests."""

from __future__ import annotations

import ast
import functools
import hashlib
import re

from coding_framework.problems import Problem

NO_TESTS_TAG = "no-tests"
DEFAULT_ENTRY_POINT = "solution"
# No assert, so the grader counts zero test units: the code runs, and nothing can pass.
_NO_TESTS = "pass  # free-text problem: no tests\n"
_NAMED = re.compile(r"(?:def\s+|function\s+(?:named\s+|called\s+)?`?)(?P<name>[A-Za-z_]\w*)\s*`?\s*\(")


def problem_from_text(text: str, entry_point: str | None = None) -> Problem:
    """A testless Problem for a plain-language request.

    The entry point is ``entry_point``, else a function the text names (``def foo(`` or "function
    `foo(`"), else ``solution``. The Executor runs such code but never reports it as passed.
    """
    statement = text.strip()
    if not statement:
        raise ValueError("the problem text is empty: describe the function to write")
    match = _NAMED.search(statement)
    name = entry_point or (match.group("name") if match else DEFAULT_ENTRY_POINT)
    digest = hashlib.sha1(statement.encode()).hexdigest()[:10]
    return Problem(
        task_id=f"text/{digest}",
        prompt=statement,
        entry_point=name,
        test_code=_NO_TESTS,
        description=statement,
        tags=[NO_TESTS_TAG],
        source="text",
        prompt_is_code=False,
    )


def has_tests(problem: Problem) -> bool:
    """Whether the test code holds at least one real assertion (what the grader counts as a test)."""
    return _asserts_in(problem.test_code)


@functools.lru_cache(maxsize=4096)
def _asserts_in(test_code: str) -> bool:
    try:
        tree = ast.parse(test_code)
    except SyntaxError:
        return True  # broken tests are the grader's to report, not a reason to call the problem testless
    return any(isinstance(n, ast.Assert) and not isinstance(n.test, ast.Constant) for n in ast.walk(tree))
