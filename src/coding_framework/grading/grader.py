"""The one grader behind training rewards and benchmark scores."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

from coding_framework.config.sandbox import SandboxConfig
from coding_framework.grading.jobs import job_for, unittest_task_for
from coding_framework.grading.limits import LimitLearner
from coding_framework.problems.problem import Problem
from coding_framework.sandbox import ExecutionResult, Job, Sandbox
from coding_framework.sandbox.inprocess import InProcessSandbox


class Grader:
    """Grades complete programs against a problem's trusted tests in the sandbox.

    Function-level problems go to the hardened judge (``tier="hardened"``); ``unittest`` problems
    (BigCodeBench) to the in-process tier (``tier="in_process"``), whose workers start on first use.
    With ``limit_learning.enabled`` in the sandbox config, each hardened-tier problem is graded under the
    limits that ``self.limits`` (a :class:`LimitLearner`) learned for it; otherwise under the config's.
    """

    def __init__(
        self,
        config: SandboxConfig | None = None,
        sandbox: Sandbox | None = None,
        inprocess: InProcessSandbox | None = None,
    ) -> None:
        self.sandbox = sandbox or Sandbox(config)
        self._owns_sandbox = sandbox is None
        self._inprocess = inprocess
        self._owns_inprocess = inprocess is None
        self._inprocess_lock = threading.Lock()
        learning, ceiling = self.sandbox.config.limit_learning, self.sandbox.config.limits
        self.limits = LimitLearner(learning, ceiling) if learning.enabled else None

    @property
    def inprocess(self) -> InProcessSandbox:
        """The in-process tier's pool, made from ``config.inprocess`` on first use."""
        with self._inprocess_lock:
            if self._inprocess is None:
                self._inprocess = InProcessSandbox(self.sandbox.config.inprocess)
            return self._inprocess

    def __enter__(self) -> Grader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def grade(self, problem: Problem, program: str) -> ExecutionResult:
        if problem.test_format == "unittest":
            return self.inprocess.run(unittest_task_for(problem, program))
        return self._observed([problem], [self.sandbox.run(self._job(problem, program))])[0]

    def grade_many(
        self, items: Sequence[tuple[Problem, str]], progress: bool | str = False
    ) -> list[ExecutionResult]:
        """Grade every item, concurrently within each tier; results in input order."""
        unit = [i for i, (p, _) in enumerate(items) if p.test_format == "unittest"]
        in_unit = set(unit)
        rest = [i for i in range(len(items)) if i not in in_unit]
        results: dict[int, ExecutionResult] = {}
        if unit:
            tasks = [unittest_task_for(*items[i]) for i in unit]
            results.update(zip(unit, self.inprocess.run_many(tasks, progress=progress), strict=True))
        if rest:
            problems = [items[i][0] for i in rest]
            if self.limits is not None:
                self.limits.calibrate(self.sandbox, list({p.task_id: p for p in problems}.values()))
            jobs = [self._job(*items[i]) for i in rest]
            graded = self._observed(problems, self.sandbox.run_many(jobs, progress=progress))
            results.update(zip(rest, graded, strict=True))
        return [results[i] for i in range(len(items))]

    async def agrade(self, problem: Problem, program: str) -> ExecutionResult:
        if problem.test_format == "unittest":
            return await self.inprocess.arun(unittest_task_for(problem, program))
        if self.limits is not None:
            job = await asyncio.to_thread(self._job, problem, program)
        else:
            job = self._job(problem, program)
        return self._observed([problem], [await self.sandbox.arun(job)])[0]

    def _job(self, problem: Problem, program: str) -> Job:
        if self.limits is None:
            return job_for(problem, program, self.sandbox.config.limits)
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
        if self._owns_inprocess and self._inprocess is not None:
            self._inprocess.close()
