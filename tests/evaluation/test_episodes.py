"""The one evaluation path: episode order, grading in input order, pass@k grouped by task, family rates."""

from __future__ import annotations

import pytest

from coding_framework.evaluation import Scores, agrade, family, grade, pass_at_k_by_task, repeat, score
from coding_framework.evaluation.passk import summarize
from coding_framework.grading import ExecutionResult
from coding_framework.problems import Problem
from coding_framework.testing.grader import InProcessGrader


def _problem(name: str, tags: list[str], source: str = "") -> Problem:
    return Problem(
        task_id=f"t/{name}", prompt=f"Write {name}(x).", entry_point=name, prompt_is_code=False,
        test_code=f"assert {name}(2) == 4\n", tags=tags, source=source,
    )


DOUBLE = _problem("double", ["arith", "easy"])
SQUARE = _problem("square", ["arith"])
QUAD = _problem("quad", [], source="builtin")
RIGHT = {"double": "return x * 2", "square": "return x * x", "quad": "return x * 2"}


def _program(problem: Problem, right: bool) -> str:
    return f"def {problem.entry_point}(x):\n    {RIGHT[problem.entry_point] if right else 'return 0'}\n"


def _verdicts(*passed: bool) -> list[ExecutionResult]:
    return [ExecutionResult(passed=p, status="passed" if p else "failed") for p in passed]


def test_repeat_keeps_each_problems_samples_together() -> None:
    assert repeat([DOUBLE, SQUARE], 2) == [DOUBLE, DOUBLE, SQUARE, SQUARE]
    with pytest.raises(ValueError, match="at least 1 sample"):
        repeat([DOUBLE], 0)


async def test_grade_and_agrade_return_verdicts_in_input_order() -> None:
    problems = [DOUBLE, SQUARE, QUAD, DOUBLE]
    programs = [_program(p, right) for p, right in zip(problems, [True, False, True, False], strict=True)]
    sync = grade(InProcessGrader(), problems, programs)
    assert [r.passed for r in sync] == [True, False, True, False]
    concurrent = await agrade(InProcessGrader(), problems, programs)
    assert [r.passed for r in concurrent] == [True, False, True, False]
    with pytest.raises(ValueError, match="shorter"):
        grade(InProcessGrader(), problems, programs[:2])


def test_pass_at_k_groups_by_task_in_order_of_first_appearance() -> None:
    ids = ["a", "b", "a", "b", "c", "c"]
    passed = [True, False, False, False, True, True]
    assert pass_at_k_by_task(ids, passed, ks=(1, 2, 3)) == summarize(
        {"a": [True, False], "b": [False, False], "c": [True, True]}, (1, 2, 3)
    )
    assert pass_at_k_by_task(ids, passed, ks=(1, 2)) == {"pass@1": 0.5, "pass@2": pytest.approx(2 / 3)}


def test_score_reports_pass_at_k_and_per_family_rates() -> None:
    episodes = repeat([SQUARE, QUAD, DOUBLE], 2)
    scores = score(episodes, _verdicts(True, True, False, True, False, False), ks=(1, 2, 10))
    assert scores == Scores(
        pass_at_k={"pass@1": pytest.approx((1.0 + 0.5 + 0.0) / 3), "pass@2": pytest.approx((1 + 1 + 0) / 3)},
        by_family={"arith": 0.5, "builtin": 0.5},
        by_task={SQUARE.task_id: 1.0, QUAD.task_id: 0.5, DOUBLE.task_id: 0.0},
    )
    assert [family(p) for p in (DOUBLE, SQUARE, QUAD)] == ["arith", "arith", "builtin"]
    assert list(score([QUAD, DOUBLE], _verdicts(True, True)).by_family) == ["arith", "builtin"]
