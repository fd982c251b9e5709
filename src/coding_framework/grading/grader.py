"""The one grader behind training rewards and benchmark scores."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

from coding_framework.config.sandbox import SandboxConfig
from coding_framework.grading.jobs import job_for, unittest_task_for
from coding_framework.grading.languages import Language, check_language, compiled
from coding_framework.grading.limits import LimitLearner
from coding_framework.grading.tiers import tier_of
from coding_framework.problems.problem import Problem
from coding_framework.sandbox import ExecutionResult, Job, Sandbox
from coding_framework.sandbox.inprocess import InProcessSandbox


class Grader:
    """Grades complete programs against a problem's trusted tests in the sandbox.

    Each problem goes to its trust tier (``tiers.tier_of``): the hardened judge, or the in-process tier
    (BigCodeBench), whose workers start on first use. Programs are Python unless ``grade_many`` is told
    otherwise (``languages``: C++ compiles first). With ``limit_learning.enabled`` in the sandbox config,
    each hardened-tier Python program is graded under the limits that ``self.limits`` (a
    :class:`LimitLearner`) learned for its problem; otherwise, and for C++ (the limits are learned from
    Python runs), under the config's.
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
        if tier_of(problem) == "in_process":
            return self.inprocess.run(unittest_task_for(problem, program))
        return self._observed([problem], [self.sandbox.run(self._job(problem, program))])[0]

    def grade_many(
        self,
        items: Sequence[tuple[Problem, str]],
        progress: bool | str = False,
        languages: Sequence[Language] | None = None,
    ) -> list[ExecutionResult]:
        """Grade every item, concurrently within each tier; results in input order. ``languages[i]`` is
        the language of ``items[i]``'s program (default: Python for all)."""
        langs: Sequence[Language] = languages if languages is not None else ["python"] * len(items)
        if len(langs) != len(items):
            raise ValueError(f"{len(items)} programs but {len(langs)} languages")
        for (problem, _), language in zip(items, langs, strict=True):
            check_language(problem, language)
        unit = [i for i, (p, _) in enumerate(items) if tier_of(p) == "in_process"]
        in_unit = set(unit)
        rest = [i for i in range(len(items)) if i not in in_unit]
        results: dict[int, ExecutionResult] = {}
        if unit:
            tasks = [unittest_task_for(*items[i]) for i in unit]
            results.update(zip(unit, self.inprocess.run_many(tasks, progress=progress), strict=True))
        python = [items[i][0] for i in rest if langs[i] == "python"]
        if python and self.limits is not None:
            self.limits.calibrate(self.sandbox, list({p.task_id: p for p in python}.values()))
        jobs: list[tuple[int, Job]] = []
        for i in rest:
            problem, program = items[i]
            if langs[i] == "python":
                job: Job | ExecutionResult = self._job(problem, program)
            else:
                job = compiled(job_for(problem, program, self.sandbox.config.limits), langs[i])
            if isinstance(job, ExecutionResult):
                results[i] = job
            else:
                jobs.append((i, job))
        if jobs:
            ran = self.sandbox.run_many([job for _, job in jobs], progress=progress)
            results.update((i, r) for (i, _), r in zip(jobs, ran, strict=True))
            observed = [i for i, _ in jobs if langs[i] == "python"]
            self._observed([items[i][0] for i in observed], [results[i] for i in observed])
        return [results[i] for i in range(len(items))]

    async def agrade(self, problem: Problem, program: str) -> ExecutionResult:
        if tier_of(problem) == "in_process":
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
