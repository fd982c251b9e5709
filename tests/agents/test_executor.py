from __future__ import annotations

import pytest

from coding_framework.agents.executor import (
    NO_CODE,
    CodeExecutor,
    assemble_program,
    completion_for,
    feedback_from_result,
)
from coding_framework.agents.freeform import problem_from_text
from coding_framework.config.agents import ExecutorConfig
from coding_framework.grading import ExecutionResult
from coding_framework.grading import TestOutcome as Outcome
from coding_framework.testing.grader import InProcessGrader


def _failed(**kw) -> ExecutionResult:
    tests = [
        Outcome(index=0, source="assert f(1) == 1", passed=True),
        Outcome(
            index=1,
            source="assert f(2) == 4",
            passed=False,
            error_type="AssertionError",
            message="assert 3 == 4",
        ),
        Outcome(index=2, source="assert f(3) == 9", passed=False, error_type="TypeError", message="bad"),
    ]
    return ExecutionResult(passed=False, status="failed", tests=tests, tests_passed=1, tests_total=3, **kw)


def test_feedback_quotes_the_first_failing_test() -> None:
    text = feedback_from_result(_failed(), True, ExecutorConfig())
    assert text.startswith("1/3 tests passed. First failure: test 2 `assert f(2) == 4` -> AssertionError")
    assert "assert 3 == 4" in text
    assert "TypeError" not in text


def test_feedback_truncates_output_and_total_length() -> None:
    result = _failed(stdout="x" * 5000)
    text = feedback_from_result(result, True, ExecutorConfig(max_output_chars=100, max_feedback_chars=300))
    assert "stdout: xxx" in text
    assert "chars cut]" in text
    assert len(text) <= 300


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("timeout", "ran out of time"),
        ("memory", "ran out of memory"),
        ("crashed", "crashed the interpreter"),
    ],
)
def test_feedback_names_resource_limits(status: str, expected: str) -> None:
    result = ExecutionResult(passed=False, status=status, tests_total=4, tests_passed=1)
    text = feedback_from_result(result, True, ExecutorConfig())
    assert expected in text
    assert "1/4 tests passed before it" in text


def test_feedback_for_code_that_never_reaches_the_tests() -> None:
    result = ExecutionResult(
        passed=False, status="error", error_type="SyntaxError", error_message="bad (line 2)"
    )
    text = feedback_from_result(result, True, ExecutorConfig())
    assert text == "The code failed before any test ran: SyntaxError: bad (line 2)"


def test_feedback_without_tests_never_claims_success() -> None:
    clean = ExecutionResult(passed=False, status="error", error_type="NoTests", error_message="no assertions")
    assert "no tests, so correctness was not checked" in feedback_from_result(clean, False, ExecutorConfig())
    broken = ExecutionResult(passed=False, status="error", error_type="KeyError", error_message="1")
    assert feedback_from_result(broken, False, ExecutorConfig()).startswith(
        "The code failed to run: KeyError: 1"
    )


def test_assemble_keeps_prompt_context_and_replaces_the_stub(stub_problem) -> None:
    full = "def double_all(xs):\n    return [helper(x) for x in xs]\n"
    program = assemble_program(stub_problem, full)
    assert program == stub_problem.prompt + "\n" + full
    body = "    return [x * 2 for x in xs]\n"
    assert assemble_program(stub_problem, body) == stub_problem.prompt + body
    assert stub_problem.completion_program(completion_for(stub_problem, full)) == program


def test_a_stub_without_docstring_gets_a_body_before_the_new_function(stub_problem) -> None:
    bare = stub_problem.model_copy(update={"prompt": "import math\n\n\ndef double_all(xs):\n"})
    program = assemble_program(bare, "def double_all(xs):\n    return xs\n")
    assert program == "import math\n\n\ndef double_all(xs):\n    pass\n\ndef double_all(xs):\n    return xs\n"
    assert bare.completion_program(completion_for(bare, "def double_all(xs):\n    return xs\n")) == program


def test_statement_problems_grade_the_code_itself(add_problem) -> None:
    code = "def add(a, b):\n    return a + b\n"
    assert assemble_program(add_problem, code) == code == completion_for(add_problem, code)


async def test_executor_grades_full_functions_and_bodies(stub_problem) -> None:
    executor = CodeExecutor(InProcessGrader())
    full = await executor.aexecute(stub_problem, "def double_all(xs):\n    return [helper(x) for x in xs]\n")
    body = await executor.aexecute(stub_problem, "    return [x * 2 for x in xs]\n")
    wrong = await executor.aexecute(stub_problem, "def double_all(xs):\n    return xs\n")
    assert (full.passed, body.passed, wrong.passed) == (True, True, False)
    assert wrong.tests_passed == 1 and wrong.tests_total == 2
    assert wrong.failures == ["test 1 `assert candidate([1, 2]) == [2, 4]` -> AssertionError"]


async def test_free_text_code_runs_but_never_passes() -> None:
    executor = CodeExecutor(InProcessGrader())
    problem = problem_from_text("Write a function fib(n) returning the n-th Fibonacci number.")
    result = await executor.aexecute(
        problem, "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
    )
    assert result.passed is False
    assert result.has_tests is False
    assert "no tests" in result.feedback


async def test_an_answer_without_code_is_not_graded(add_problem) -> None:
    grader = InProcessGrader()
    result = await CodeExecutor(grader).aexecute(add_problem, "  \n")
    assert (result.passed, result.status, result.feedback) == (False, "error", NO_CODE)
    assert grader.programs == []


async def test_error_lines_are_numbered_as_in_the_draft(stub_problem) -> None:
    class SyntaxGrader(InProcessGrader):
        async def agrade(self, problem, program):
            line = program.splitlines().index("    return xs)") + 1
            return ExecutionResult(
                passed=False,
                status="error",
                error_type="SyntaxError",
                error_message=f"unmatched ')' (<submission>, line {line})",
            )

    result = await CodeExecutor(SyntaxGrader()).aexecute(
        stub_problem, "def double_all(xs):\n    return xs)\n"
    )
    assert (
        result.feedback
        == "The code failed before any test ran: SyntaxError: unmatched ')' (<submission>, line 2)"
    )
