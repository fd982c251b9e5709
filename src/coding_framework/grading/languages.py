"""The languages a program may be written in, and the sandbox job each becomes.

Every problem takes Python. A stdin/stdout problem (CodeContests) also takes C++: the source is compiled
first, confined (``sandbox.cpp``), and the binary runs in the hardened judge; a program that does not
compile is a failing result, not an error.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from coding_framework.problems.problem import Problem
from coding_framework.sandbox import ExecutionResult, Job
from coding_framework.sandbox.cpp import CompileError, compile_cpp

__all__ = ["LANGUAGES", "Language", "check_language", "compiled", "languages_for"]

Language = Literal["python", "cpp"]
LANGUAGES: tuple[Language, ...] = ("python", "cpp")


def languages_for(problem: Problem) -> tuple[Language, ...]:
    return LANGUAGES if problem.test_format == "stdio" else ("python",)


def check_language(problem: Problem, language: str) -> None:
    """ValueError unless ``problem`` takes programs in ``language``."""
    if language not in languages_for(problem):
        raise ValueError(f"{problem.task_id} is graded in {' or '.join(languages_for(problem))} only, "
                         f"not {language!r}")


def compiled(job: Job, language: Language) -> Job | ExecutionResult:
    """``job`` (its program in ``language``, one its problem takes) as the sandbox runs it: the job itself
    for Python, the compiled binary's job for C++, or the failing result of a program that does not
    compile."""
    if language == "python":
        return job
    try:
        return dataclasses.replace(job, language="cpp", binary=compile_cpp(job.program))
    except CompileError as exc:
        return ExecutionResult(
            passed=False, status="error", error_type="CompileError", error_message=str(exc)
        )
