"""Efficiency: CPU time of the submission's process against the reference solution's, both in the sandbox."""

from __future__ import annotations

import math
import statistics
import threading
from collections.abc import Sequence

from coding_framework.grading import ExecutionResult
from coding_framework.problems.problem import Problem
from coding_framework.rewards.base import BaseRewardFunction, Item, RewardOutput, clip, register_reward

# Below this, CPU time is loading and accounting granularity, not the algorithm: both sides count as equal.
MIN_TIME_S = 5e-3


@register_reward("efficiency")
class EfficiencyReward(BaseRewardFunction):
    """For a passing program: 1.0 up to ``efficiency_tolerance`` times the reference's runtime, -1.0 at
    ``efficiency_max_ratio`` times it, log-linear in between. Failing programs score 0: correctness already
    penalises them. Reference timings are measured once per problem and cached: the median of ``repeats``
    runs, so that one run of the reference code itself lands on either side of it.
    """

    def __init__(self, *args, repeats: int = 3, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.repeats = repeats
        self._reference: dict[str, float | None] = {}
        self._lock = threading.Lock()

    def reference_time(self, problems: Sequence[Problem]) -> dict[str, float | None]:
        missing = {p.task_id: p for p in problems if p.task_id not in self._reference and p.solutions}
        if missing:
            todo = [(p, p.solutions[0]) for p in missing.values() for _ in range(self.repeats)]
            timings: dict[str, list[float]] = {}
            for (p, _), res in zip(todo, self.grader.grade_many(todo), strict=True):
                if res.passed:
                    timings.setdefault(p.task_id, []).append(res.cpu_time_s)
            with self._lock:
                for task_id in missing:
                    self._reference[task_id] = (
                        statistics.median(timings[task_id]) if task_id in timings else None
                    )
        return {p.task_id: self._reference.get(p.task_id) for p in problems}

    def score_batch(
        self, items: Sequence[Item], results: Sequence[ExecutionResult] | None = None
    ) -> list[RewardOutput]:
        results = list(results) if results is not None else self.execute(items)
        refs = self.reference_time([p for p, _ in items])
        tolerance = self.config.efficiency_tolerance
        log_span = math.log(self.config.efficiency_max_ratio / tolerance)
        outs = []
        for (problem, _), res in zip(items, results, strict=True):
            ref = refs.get(problem.task_id)
            if not res.passed or ref is None:
                reason = "program failed" if not res.passed else "no passing reference solution"
                outs.append(RewardOutput(value=0.0, raw=math.nan, details={"reason": reason}))
                continue
            ratio = max(res.cpu_time_s, MIN_TIME_S) / max(ref, MIN_TIME_S)
            value = 1.0 - 2.0 * max(math.log(ratio / tolerance), 0.0) / log_span
            outs.append(
                RewardOutput(
                    value=clip(value, self.config.clip),
                    raw=ratio,
                    details={"candidate_cpu_s": res.cpu_time_s, "reference_cpu_s": ref},
                )
            )
        return outs
