"""The one grader behind training rewards and benchmark scores."""

from __future__ import annotations

from collections.abc import Sequence

from coding_framework.config.sandbox import ResourceLimits, SandboxConfig
from coding_framework.problems.problem import Problem
from coding_framework.sandbox import ExecutionResult, Job, Sandbox


def job_for(problem: Problem, program: str, defaults: ResourceLimits | None = None) -> Job:
    """The sandbox job; a problem's own ``timeout_s`` (CodeContests, EvalPlus) replaces the default budget."""
    limits = None
    if problem.timeout_s is not None:
        limits = (defaults or ResourceLimits()).model_copy(update={"timeout_s": problem.timeout_s, "cpu_s": None})
    return Job(
        program=program,
        test_code=problem.test_code,
        entry_point=problem.entry_point,
        test_format=problem.test_format,
        prelude=problem.prelude,
        limits=limits,
    )


class Grader:
    """Grades complete programs against a problem's trusted tests in the sandbox."""

    def __init__(self, config: SandboxConfig | None = None, sandbox: Sandbox | None = None) -> None:
        self.sandbox = sandbox or Sandbox(config)
        self._owns_sandbox = sandbox is None

    def __enter__(self) -> Grader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def grade(self, problem: Problem, program: str) -> ExecutionResult:
        return self.sandbox.run(job_for(problem, program, self.sandbox.config.limits))

    def grade_many(
        self, items: Sequence[tuple[Problem, str]], progress: bool | str = False
    ) -> list[ExecutionResult]:
        defaults = self.sandbox.config.limits
        return self.sandbox.run_many([job_for(p, prog, defaults) for p, prog in items], progress=progress)

    async def agrade(self, problem: Problem, program: str) -> ExecutionResult:
        return await self.sandbox.arun(job_for(problem, program, self.sandbox.config.limits))

    def close(self) -> None:
        if self._owns_sandbox:
            self.sandbox.close()
