from __future__ import annotations

from coding_framework.grading import Grader
from coding_framework.problems import Problem

HUMANEVAL_STYLE = Problem(
    task_id="toy/poly", entry_point="root",
    prompt='def poly(xs, x):\n    return sum(c * x ** i for i, c in enumerate(xs))\n\n\ndef root(xs):\n    """Find x with poly(xs, x) == 0."""\n',
    test_code="def check(candidate):\n    assert abs(poly([-4, 2], candidate([-4, 2]))) < 1e-9\n",
    test_format="check_function",
)


def test_trusted_helpers_come_from_the_prompt_not_the_submission():
    honest = HUMANEVAL_STYLE.completion_program("    return -xs[0] / xs[1]\n")
    # Redefining the helper the tests use does not help a wrong answer: the tests see the prompt's `poly`.
    cheat = HUMANEVAL_STYLE.completion_program("    return 0\n\ndef poly(xs, x):\n    return 0\n")
    honest_prelude = HUMANEVAL_STYLE.model_copy(update={"prelude": HUMANEVAL_STYLE.prompt})
    with Grader() as grader:
        results = grader.grade_many([(honest_prelude, honest), (honest_prelude, cheat)])
    assert [r.passed for r in results] == [True, False]


async def test_async_and_sync_agree():
    problem = HUMANEVAL_STYLE.model_copy(update={"prelude": HUMANEVAL_STYLE.prompt})
    program = problem.completion_program("    return -xs[0] / xs[1]\n")
    with Grader() as grader:
        a = await grader.agrade(problem, program)
        b = grader.grade(problem, program)
    assert a.passed and b.passed and a.tests_total == b.tests_total == 1
