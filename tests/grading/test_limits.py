"""The limit learner: bounds, monotone margins, determinism, and the grader grading under learned limits."""

from __future__ import annotations

import itertools

import pytest

from coding_framework.config import SandboxConfig
from coding_framework.config.sandbox import LimitLearningConfig, ResourceLimits
from coding_framework.grading import Grader, LimitLearner
from coding_framework.grading.limits import count_test_units, learned_timeout
from coding_framework.problems.problem import Problem
from coding_framework.sandbox import ExecutionResult

CEILING = ResourceLimits(timeout_s=3.0, memory_mb=1024)
LEARNING = LimitLearningConfig(enabled=True)


def _problem(task_id: str, solution: str, asserts: int = 2) -> Problem:
    tests = "".join(f"assert f({i}) == {i}\n" for i in range(asserts))
    return Problem(
        task_id=task_id, prompt="def f(x):\n", entry_point="f", test_code=tests, solutions=[solution]
    )


def _run(passed: bool, seconds: float) -> ExecutionResult:
    return ExecutionResult(passed=passed, status="passed" if passed else "timeout", duration_s=seconds)


SLOWEST = [0.0, 0.001, 0.05, 0.1, 0.4, 0.6, 0.9, 2.0, 50.0]


def test_learned_timeouts_stay_within_the_floor_and_the_ceiling() -> None:
    for slowest, ceiling in itertools.product(SLOWEST, [0.5, 1.0, 3.0, 10.0]):
        timeout = learned_timeout(slowest, LEARNING, ceiling)
        assert timeout <= ceiling
        assert timeout >= min(ceiling, LEARNING.time_floor_s)


def test_learned_timeouts_are_monotone_in_the_evidence_and_the_margins() -> None:
    for ceiling in (3.0, 30.0):
        timeouts = [learned_timeout(s, LEARNING, ceiling) for s in SLOWEST]
        assert timeouts == sorted(timeouts)
        for field, values in (("time_margin", [1.0, 2.0, 4.0, 8.0]), ("time_slack_s", [0.0, 0.5, 1.0])):
            for slowest in SLOWEST:
                by_margin = [
                    learned_timeout(slowest, LEARNING.model_copy(update={field: v}), ceiling) for v in values
                ]
                assert by_margin == sorted(by_margin), (field, slowest)


def test_a_limit_never_shrinks_as_runs_come_in_and_only_passes_count() -> None:
    learner = LimitLearner(LEARNING, CEILING)
    problem = _problem("p", "def f(x):\n    return x\n")
    seen = []
    for passed, seconds in [(True, 0.1), (True, 0.4), (False, 2.9), (True, 0.2), (True, 0.6)]:
        learner.observe(problem, _run(passed, seconds))
        seen.append(learner.limits_for(problem).timeout_s)
    assert seen == sorted(seen)
    assert seen[-1] == pytest.approx(4.0 * 0.6 + 0.5)
    assert seen[2] == seen[1], "a timeout is no evidence of honest runtime"


def test_learned_limits_do_not_depend_on_the_order_of_the_runs() -> None:
    problem = _problem("p", "def f(x):\n    return x\n")
    runs = [_run(True, 0.31), _run(True, 0.07), _run(False, 3.0), _run(True, 0.12)]
    limits = set()
    for order in itertools.permutations(runs):
        learner = LimitLearner(LEARNING, CEILING)
        for run in order:
            learner.observe(problem, run)
        limits.add(learner.limits_for(problem).model_dump_json())
    assert len(limits) == 1


def test_only_time_and_memory_change_and_never_above_the_ceiling() -> None:
    ceiling = ResourceLimits(timeout_s=2.0, cpu_s=1.5, memory_mb=200, output_bytes=999, tmp_size_mb=7)
    learner = LimitLearner(LEARNING, ceiling)
    problem = _problem("p", "def f(x):\n    return x\n")
    assert learner.limits_for(problem) == ceiling, "nothing known yet: the ceiling"
    learner.observe(problem, _run(True, 0.01))
    learner._known["p"].memory_floor_ok = True
    limits = learner.limits_for(problem)
    assert limits.timeout_s == 1.0 and limits.cpu_s == 1.5 and limits.memory_mb == 200
    assert limits.model_dump(exclude={"timeout_s", "cpu_s", "memory_mb"}) == ceiling.model_dump(
        exclude={"timeout_s", "cpu_s", "memory_mb"}
    )


def test_the_feature_is_the_number_of_asserts() -> None:
    assert count_test_units(_problem("p", "", asserts=5)) == 5
    assert count_test_units(Problem(task_id="q", prompt="", entry_point="f", test_code="x = (")) == 1


@pytest.fixture(scope="module")
def grader() -> Grader:
    config = SandboxConfig(workers=4, limits=CEILING, limit_learning=LEARNING)
    with Grader(config) as g:
        yield g


@pytest.mark.slow
def test_the_grader_calibrates_then_grades_under_learned_limits(grader: Grader) -> None:
    fast = _problem("fast", "def f(x):\n    return x\n")
    slow = _problem("slow", "import time\ndef f(x):\n    time.sleep(0.25)\n    return x\n")
    hungry = _problem("hungry", "x = bytearray(400 << 20)\ndef f(y):\n    return y\n")
    loop = "def f(x):\n    while True:\n        pass\n"
    results = grader.grade_many([(fast, loop), (slow, slow.solutions[0]), (hungry, hungry.solutions[0])])
    assert [r.status for r in results] == ["timeout", "passed", "passed"]
    assert results[0].duration_s < 2.0, "the infinite loop met the learned 1 s limit, not the 3 s ceiling"
    assert grader.limits is not None
    assert grader.limits.limits_for(fast).timeout_s == LEARNING.time_floor_s
    assert grader.limits.limits_for(fast).memory_mb == LEARNING.memory_floor_mb
    assert grader.limits.limits_for(slow).timeout_s >= 4 * 0.5 + 0.5, "two sleeps per run, times the margin"
    assert grader.limits.limits_for(hungry).memory_mb == CEILING.memory_mb, "failed under the floor: ceiling"
    unseen = Problem(task_id="unseen", prompt="", entry_point="f", test_code="assert f(1) == 1\n")
    predicted = grader.limits.limits_for(unseen).timeout_s
    assert LEARNING.time_floor_s < predicted <= CEILING.timeout_s, "no reference: the slowest rate per assert"
