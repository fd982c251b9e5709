"""Correctness from the grader: 1 only on positive confirmation of every test, or the share passed."""

from __future__ import annotations

from collections.abc import Sequence

from coding_framework.grading import ExecutionResult
from coding_framework.rewards.base import BaseRewardFunction, Item, RewardOutput, clip, register_reward
from coding_framework.rewards.tiers import refuse_in_process


@register_reward("correctness")
class CorrectnessReward(BaseRewardFunction):
    """``binary``: 1.0 if every test passed, else 0.0. ``fraction``: tests passed / tests counted."""

    def score_batch(
        self, items: Sequence[Item], results: Sequence[ExecutionResult] | None = None
    ) -> list[RewardOutput]:
        refuse_in_process(self.config, [p for p, _ in items], results)
        if results is None:
            results = self.execute(items)
            refuse_in_process(self.config, [p for p, _ in items], results)
        outs = []
        for res in results:
            raw = float(res.passed) if self.config.correctness_mode == "binary" else res.pass_fraction
            outs.append(
                RewardOutput(
                    value=clip(raw, self.config.clip),
                    raw=raw,
                    details={"status": res.status, "summary": res.summary},
                )
            )
        return outs
