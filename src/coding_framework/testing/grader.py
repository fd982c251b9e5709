"""An in-process grader with the Grader's async API, for fast graph tests and the orchestration benchmark.

It runs trusted test code in this process (no sandbox): use it only on code the test itself wrote.
"""

from __future__ import annotations

import ast
import contextlib
import io
import traceback

from coding_framework.grading import ExecutionResult, TestOutcome
from coding_framework.problems import Problem


def _units(problem: Problem) -> tuple[str, list[str]]:
    """(setup code, test unit sources); a unit is a top-level statement containing an assert."""
    tree = ast.parse(problem.test_code)
    body = tree.body
    if problem.test_format == "check_function":
        body = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check").body
    tests = [s for s in body if any(isinstance(n, ast.Assert) for n in ast.walk(s))]
    setup = [
        s for s in tree.body if s not in tests and not (isinstance(s, ast.FunctionDef) and s.name == "check")
    ]
    return ast.unparse(ast.Module(setup, [])), [ast.unparse(t) for t in tests]


class InProcessGrader:
    def __init__(self) -> None:
        self.programs: list[str] = []

    def grade(self, problem: Problem, program: str) -> ExecutionResult:
        self.programs.append(program)
        setup, units = _units(problem)
        scope: dict = {}
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(problem.prelude + "\n" + program, "<candidate>", "exec"), scope)
                exec(setup, scope)
        except Exception as exc:
            return ExecutionResult(
                passed=False,
                status="error",
                error_type=type(exc).__name__,
                error_message=str(exc),
                stdout=out.getvalue(),
                stderr=traceback.format_exc(limit=1),
                tests_total=len(units),
            )
        if problem.test_format == "check_function":
            scope["candidate"] = scope.get(problem.entry_point)
        tests = [self._run(i, src, scope) for i, src in enumerate(units)]
        passed = bool(tests) and all(t.passed for t in tests)
        status = "passed" if passed else ("error" if not tests else "failed")
        return ExecutionResult(
            passed=passed,
            status=status,
            tests=tests,
            tests_total=len(tests),
            tests_passed=sum(t.passed for t in tests),
            stdout=out.getvalue(),
            error_type=None if tests else "NoTests",
        )

    @staticmethod
    def _run(index: int, source: str, scope: dict) -> TestOutcome:
        try:
            exec(source, scope)
        except Exception as exc:
            return TestOutcome(
                index=index, source=source, passed=False, error_type=type(exc).__name__, message=str(exc)
            )
        return TestOutcome(index=index, source=source, passed=True)

    def grade_many(
        self, items: list[tuple[Problem, str]], progress: bool | str = False
    ) -> list[ExecutionResult]:
        return [self.grade(problem, program) for problem, program in items]

    async def agrade(self, problem: Problem, program: str) -> ExecutionResult:
        return self.grade(problem, program)
