"""Per-problem resource limits learned from honest runtimes, always under the configured ceilings.

A problem's timeout is ``time_margin x`` the slowest honest run seen for it, plus ``time_slack_s``, clamped
to ``[time_floor_s, ceiling.timeout_s]``. Honest runs are the problem's reference solutions, graded
``repetitions`` times under the ceilings the first time the problem is graded, and afterwards every
passing run of any program (a pass is honest evidence of how long the problem can take; only the
slowest matters, so the limit never shrinks as evidence comes in). The judge's own clock gives the time:
``duration_s`` covers loading the program and every test, which is what the timeout bounds.

A problem without a reference that passes gets a timeout predicted from its features: the number of
test units times the slowest seconds-per-unit seen on any calibrated problem, with the same margins.
With nothing calibrated yet it keeps the ceiling.

The memory cap is learned by trial: the reference runs are graded under ``memory_floor_mb``; the cap is
kept when every one of them passes, otherwise the problem keeps the ceiling's ``memory_mb``.

Nothing here touches isolation: only ``timeout_s``, ``cpu_s`` and ``memory_mb`` of a job change, each to a
value no larger than the ceiling's. Learned limits are a pure function of the observations (their
order does not matter), rounded up to 10 ms.
"""

from __future__ import annotations

import ast
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from coding_framework.config.sandbox import LimitLearningConfig, ResourceLimits
from coding_framework.grading.jobs import job_for
from coding_framework.problems.problem import Problem
from coding_framework.sandbox import ExecutionResult, Sandbox


def count_test_units(problem: Problem) -> int:
    """Feature: how many asserts the tests hold (at least 1), a proxy for how many calls a run makes."""
    try:
        tree = ast.parse(problem.test_code)
    except SyntaxError:
        return 1
    return max(1, sum(isinstance(node, ast.Assert) for node in ast.walk(tree)))


@dataclass
class ProblemTimings:
    """What is known about one problem's honest runs."""

    units: int
    slowest_s: float = 0.0
    honest_runs: int = 0
    memory_floor_ok: bool = False
    calibrated: bool = False
    references_failed: list[str] = field(default_factory=list)


def _round_up(seconds: float) -> float:
    return math.ceil(seconds * 100 - 1e-9) / 100


def learned_timeout(slowest_s: float, config: LimitLearningConfig, ceiling_s: float) -> float:
    """The timeout for a problem whose slowest honest run took ``slowest_s``: monotone in every argument."""
    wanted = max(config.time_floor_s, config.time_margin * slowest_s + config.time_slack_s)
    return min(ceiling_s, _round_up(wanted))


class LimitLearner:
    """Learns and serves per-problem :class:`ResourceLimits` under ``ceiling``. Thread-safe."""

    def __init__(self, config: LimitLearningConfig, ceiling: ResourceLimits) -> None:
        self.config, self.ceiling = config, ceiling
        self._known: dict[str, ProblemTimings] = {}
        self._lock = threading.Lock()

    def timings(self, task_id: str) -> ProblemTimings | None:
        return self._known.get(task_id)

    def observe(self, problem: Problem, result: ExecutionResult) -> None:
        """Record one run; only a pass says how long honest code takes, so anything else is ignored."""
        if not result.passed:
            return
        with self._lock:
            known = self._known.setdefault(problem.task_id, ProblemTimings(units=count_test_units(problem)))
            known.slowest_s = max(known.slowest_s, result.duration_s)
            known.honest_runs += 1

    def limits_for(self, problem: Problem) -> ResourceLimits:
        known = self._known.get(problem.task_id)
        if known is not None and known.honest_runs:
            slowest = known.slowest_s
        else:
            rate = self._slowest_per_unit()
            if rate is None:
                return self.ceiling
            slowest = rate * count_test_units(problem)
        timeout = learned_timeout(slowest, self.config, self.ceiling.timeout_s)
        memory = self.ceiling.memory_mb
        if known is not None and known.memory_floor_ok:
            memory = min(memory, self.config.memory_floor_mb)
        cpu = self.ceiling.cpu_s
        return self.ceiling.model_copy(
            update={
                "timeout_s": timeout,
                "memory_mb": memory,
                "cpu_s": None if cpu is None else min(cpu, timeout + 1.0),
            }
        )

    def _slowest_per_unit(self) -> float | None:
        rates = [k.slowest_s / k.units for k in self._known.values() if k.calibrated and k.honest_runs]
        return max(rates) if rates else None

    def calibrate(self, sandbox: Sandbox, problems: Sequence[Problem]) -> None:
        """Grade the reference solutions of problems not calibrated yet, ``repetitions`` times each."""
        with self._lock:
            todo = {p.task_id: p for p in problems if not self._is_calibrated(p.task_id)}
            for problem in todo.values():
                self._known.setdefault(problem.task_id, ProblemTimings(units=count_test_units(problem)))
                self._known[problem.task_id].calibrated = True
        trial = self.ceiling.model_copy(
            update={"memory_mb": min(self.ceiling.memory_mb, self.config.memory_floor_mb)}
        )
        runs = [
            (problem, solution)
            for problem in todo.values()
            for solution in problem.solutions
            for _ in range(self.config.repetitions)
        ]
        jobs = [job_for(problem, solution, trial) for problem, solution in runs]
        results = sandbox.run_many(jobs)
        failed_under_trial = {runs[i][0].task_id for i, r in enumerate(results) if not r.passed}
        retry = [i for i, r in enumerate(results) if r.status == "memory"]
        retried = sandbox.run_many([job_for(*runs[i], self.ceiling) for i in retry])
        for i, result in zip(retry, retried, strict=True):
            results[i] = result
        for (problem, _), result in zip(runs, results, strict=True):
            self.observe(problem, result)
            if not result.passed:
                self._known[problem.task_id].references_failed.append(result.summary)
        for task_id in todo:
            known = self._known[task_id]
            known.memory_floor_ok = known.honest_runs > 0 and task_id not in failed_under_trial

    def _is_calibrated(self, task_id: str) -> bool:
        known = self._known.get(task_id)
        return known is not None and known.calibrated


__all__ = ["LimitLearner", "ProblemTimings", "count_test_units", "learned_timeout"]
