"""Kill rates through the real grader, differential strengthening, and the pipeline's flags."""

from __future__ import annotations

import pytest

from coding_framework.config import SandboxConfig
from coding_framework.curation import (
    candidate_calls,
    dataset_kill_rate,
    filter_by_strength,
    measure_strength,
    strengthen,
)
from coding_framework.grading import Grader
from coding_framework.problems import Problem

ABS_DIFF = Problem(
    task_id="t/abs_diff",
    prompt='def abs_diff(a, b):\n    """|a - b|."""\n',
    entry_point="abs_diff",
    test_code="assert abs_diff(5, 3) == 2\n",
    solutions=['def abs_diff(a, b):\n    """|a - b|."""\n    return a - b if a > b else b - a\n'],
)
STRONG = ABS_DIFF.model_copy(
    update={
        "task_id": "t/abs_diff_strong",
        "test_code": "assert abs_diff(5, 3) == 2\nassert abs_diff(3, 5) == 2\nassert abs_diff(4, 4) == 0\n"
        "assert abs_diff(-1, 2) == 3\nassert abs_diff(0, 0) == 0\n",
    }
)
BROKEN = ABS_DIFF.model_copy(
    update={"task_id": "t/broken", "solutions": ["def abs_diff(a, b):\n    return 0\n"]}
)


@pytest.fixture(scope="module")
def grader():
    with Grader(SandboxConfig(workers=2)) as g:
        yield g


def test_weak_tests_let_mutants_survive_and_strong_ones_kill_them(grader: Grader) -> None:
    weak, strong, broken = measure_strength([ABS_DIFF, STRONG, BROKEN], grader, cap=None)
    assert weak.total == strong.total > 0
    assert weak.kill_rate is not None and strong.kill_rate is not None
    assert weak.kill_rate < strong.kill_rate
    assert len(weak.survivors) == weak.total - weak.killed
    assert broken.reference_passed is False and broken.kill_rate is None
    pooled = dataset_kill_rate([weak, strong, broken])
    assert pooled["measured"] == 2 and pooled["mutants"] == weak.total + strong.total


def test_candidate_calls_vary_one_literal_argument() -> None:
    calls = candidate_calls(ABS_DIFF, limit=10)
    assert set(calls) == {
        "abs_diff(6, 3)", "abs_diff(4, 3)", "abs_diff(-5, 3)", "abs_diff(0, 3)",
        "abs_diff(5, 4)", "abs_diff(5, 2)", "abs_diff(5, -3)", "abs_diff(5, 0)",
    }  # fmt: skip
    assert candidate_calls(ABS_DIFF, limit=2, seed=1) == candidate_calls(ABS_DIFF, limit=2, seed=1)
    assert candidate_calls(ABS_DIFF.model_copy(update={"test_format": "check_function"}), 5) == []


def test_strengthening_adds_reference_checked_asserts(grader: Grader) -> None:
    (grown,) = strengthen([ABS_DIFF], grader, per_problem=8)
    added = grown.test_code.splitlines()[1:]
    assert grown.test_code.startswith(ABS_DIFF.test_code) and len(added) == 8
    assert {"assert abs_diff(5, 4) == 1", "assert abs_diff(-5, 3) == 8"} <= set(added)
    assert grader.grade(grown, grown.solutions[0]).passed


def test_filter_flags_weak_problems_and_augment_fixes_them(grader: Grader) -> None:
    plain = filter_by_strength([ABS_DIFF, STRONG], grader, min_kill_rate=0.7, cap=None)
    assert plain.flagged == ["t/abs_diff"] and [p.task_id for p in plain.kept()] == ["t/abs_diff_strong"]
    assert plain.problems[0].kill_rate == plain.strengths[0].kill_rate and plain.problems[0].mutants > 0
    grown = filter_by_strength([ABS_DIFF], grader, min_kill_rate=0.7, cap=None, augment=True)
    before, after = grown.strengthened["t/abs_diff"]
    assert after > before and grown.problems[0].test_code != ABS_DIFF.test_code
    assert grown.problems[0].kill_rate == after


def test_strengthening_skips_calls_the_reference_answers_differently_each_run(grader: Grader) -> None:
    lucky = Problem(
        task_id="t/lucky",
        prompt="def lucky(a):\n    pass\n",
        entry_point="lucky",
        test_code="assert lucky(1) == 1\n",
        solutions=["import random\ndef lucky(a):\n    return 1 if a == 1 else random.randrange(10**9)\n"],
    )
    assert strengthen([lucky], grader) == [lucky]
