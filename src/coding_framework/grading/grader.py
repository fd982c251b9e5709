"""The one grader behind training rewards and benchmark scores."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from coding_framework.config.sandbox import ResourceLimits, SandboxConfig
from coding_framework.problems.problem import Problem
from coding_framework.sandbox import ExecutionResult, Job, Sandbox
from coding_framework.sandbox.inprocess import InProcessSandbox, UnittestTask


def job_for(problem: Problem, program: str, defaults: ResourceLimits | None = None) -> Job:
    """The sandbox job; a problem's own ``timeout_s`` (CodeContests, EvalPlus) replaces the default budget."""
    if problem.test_format == "unittest":
        raise ValueError(f"{problem.task_id} has unittest tests: the in-process tier runs them, not a Job")
    limits = None
    if problem.timeout_s is not None:
        own = {"timeout_s": problem.timeout_s, "cpu_s": None}
        limits = (defaults or ResourceLimits()).model_copy(update=own)
    return Job(
        program=program,
        test_code=problem.test_code,
        entry_point=problem.entry_point,
        test_format=problem.test_format,
        prelude=problem.prelude,
        limits=limits,
    )


def unittest_task_for(problem: Problem, program: str) -> UnittestTask:
    return UnittestTask(solution=program, test_code=problem.test_code, code_prompt=problem.code_prompt)


class Grader:
    """Grades complete programs against a problem's trusted tests in the sandbox.

    Function-level problems go to the hardened judge (``tier="hardened"``); ``unittest`` problems
    (BigCodeBench) to the in-process tier (``tier="in_process"``), whose workers start on first use.
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
        return self.sandbox.run(job_for(problem, program, self.sandbox.config.limits))

    def grade_many(
        self, items: Sequence[tuple[Problem, str]], progress: bool | str = False
    ) -> list[ExecutionResult]:
        """Grade every item, concurrently within each tier; results in input order."""
        defaults = self.sandbox.config.limits
        unit = [i for i, (p, _) in enumerate(items) if p.test_format == "unittest"]
        if not unit:
            return self.sandbox.run_many([job_for(p, prog, defaults) for p, prog in items], progress=progress)
        in_unit = set(unit)
        rest = [i for i in range(len(items)) if i not in in_unit]
        results: dict[int, ExecutionResult] = {}
        tasks = [unittest_task_for(*items[i]) for i in unit]
        results.update(zip(unit, self.inprocess.run_many(tasks, progress=progress), strict=True))
        jobs = [job_for(*items[i], defaults) for i in rest]
        results.update(zip(rest, self.sandbox.run_many(jobs, progress=progress), strict=True))
        return [results[i] for i in range(len(items))]

    async def agrade(self, problem: Problem, program: str) -> ExecutionResult:
        if problem.test_format == "unittest":
            return await self.inprocess.arun(unittest_task_for(problem, program))
        return await self.sandbox.arun(job_for(problem, program, self.sandbox.config.limits))

    def close(self) -> None:
        if self._owns_sandbox:
            self.sandbox.close()
        if self._owns_inprocess and self._inprocess is not None:
            self._inprocess.close()
