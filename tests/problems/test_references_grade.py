"""Every built-in and synthetic reference passes the real grader, and every test suite rejects a stub."""

from __future__ import annotations

import pytest

from coding_framework.config import SandboxConfig
from coding_framework.grading import Grader
from coding_framework.problems import Problem, builtin_problems, synthetic_split

pytestmark = pytest.mark.slow  # about 700 sandboxed runs


@pytest.fixture(scope="module")
def grader():
    with Grader(SandboxConfig(workers=4)) as g:
        yield g


@pytest.fixture(scope="module")
def problems() -> list[Problem]:
    train, heldout = synthetic_split()
    return builtin_problems() + train + heldout


def test_every_reference_solution_passes(grader: Grader, problems: list[Problem]) -> None:
    items = [(p, s) for p in problems for s in p.solutions]
    results = grader.grade_many(items)
    failures = [f"{p.task_id}: {r.summary}" for (p, _), r in zip(items, results, strict=True) if not r.passed]
    assert not failures, "\n".join(failures)
    assert all(r.tests_passed == r.tests_total >= 4 for r in results)


def test_every_test_suite_rejects_a_stub(grader: Grader, problems: list[Problem]) -> None:
    stubs = [(p, f"def {p.entry_point}(*a, **k):\n    return None\n") for p in problems]
    results = grader.grade_many(stubs)
    accepted = [p.task_id for (p, _), r in zip(stubs, results, strict=True) if r.passed]
    assert not accepted, accepted
    assert all(r.status == "failed" for r in results)


def test_every_test_suite_rejects_a_reference_of_another_problem(
    grader: Grader, problems: list[Problem]
) -> None:
    # A real but wrong program under the right name: the next built-in problem's reference, renamed.
    builtin = [p for p in problems if p.source == "builtin"]
    swapped = []
    for p, other in zip(builtin, builtin[1:] + builtin[:1], strict=True):
        swapped.append(
            (p, other.solutions[0].replace(f"def {other.entry_point}(", f"def {p.entry_point}(", 1))
        )
    results = grader.grade_many(swapped)
    accepted = [p.task_id for (p, _), r in zip(swapped, results, strict=True) if r.passed]
    assert not accepted, accepted
