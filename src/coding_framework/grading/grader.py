"""The one grader behind training rewards and benchmark scores."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from coding_framework.config.sandbox import ResourceLimits, SandboxConfig
from coding_framework.grading.limits import LimitLearner
from coding_framework.problems.problem import Problem
from coding_framework.sandbox import ExecutionResult, Job, Sandbox


def job_for(problem: Problem, program: str, limits: ResourceLimits | None = None) -> Job:
    return Job(
        program=program,
        test_code=problem.test_code,
        entry_point=problem.entry_point,
        test_format=problem.test_format,
        prelude=problem.prelude,
        limits=limits,
    )


class Grader:
    """Grades complete programs against a problem's trusted tests in the sandbox.

    With ``limit_learning.enabled`` in the sandbox config, each problem is graded under the limits that
    ``self.limits`` (a :class:`LimitLearner`) learned for it; otherwise under the config's ``limits``.
    """

    def __init__(self, config: SandboxConfig | None = None, sandbox: Sandbox | None = None) -> None:
        self.sandbox = sandbox or Sandbox(config)
        self._owns_sandbox = sandbox is None
        learning, ceiling = self.sandbox.config.limit_learning, self.sandbox.config.limits
        self.limits = LimitLearner(learning, ceiling) if learning.enabled else None

    def __enter__(self) -> Grader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def grade(self, problem: Problem, program: str) -> ExecutionResult:
        return self._observed([problem], [self.sandbox.run(self._job(problem, program))])[0]

    def grade_many(
        self, items: Sequence[tuple[Problem, str]], progress: bool | str = False
    ) -> list[ExecutionResult]:
        if self.limits is not None:
            self.limits.calibrate(self.sandbox, list({p.task_id: p for p, _ in items}.values()))
        results = self.sandbox.run_many([self._job(p, prog) for p, prog in items], progress=progress)
        return self._observed([p for p, _ in items], results)

    async def agrade(self, problem: Problem, program: str) -> ExecutionResult:
        if self.limits is not None:
            job = await asyncio.to_thread(self._job, problem, program)
        else:
            job = job_for(problem, program)
        return self._observed([problem], [await self.sandbox.arun(job)])[0]

    def _job(self, problem: Problem, program: str) -> Job:
        if self.limits is None:
            return job_for(problem, program)
        self.limits.calibrate(self.sandbox, [problem])
        return job_for(problem, program, self.limits.limits_for(problem))

    def _observed(self, problems: Sequence[Problem], results: list[ExecutionResult]) -> list[ExecutionResult]:
        if self.limits is not None:
            for problem, result in zip(problems, results, strict=True):
                self.limits.observe(problem, result)
        return results

    def close(self) -> None:
        if self._owns_sandbox:
            self.sandbox.close()
