"""Weighted sum of correctness, style and efficiency; each program runs in the sandbox once."""

from __future__ import annotations

from collections.abc import Sequence

from coding_framework.config.rewards import RewardConfig
from coding_framework.grading import ExecutionResult, Grader
from coding_framework.rewards.base import BaseRewardFunction, Item, RewardOutput, clip
from coding_framework.rewards.correctness import CorrectnessReward
from coding_framework.rewards.efficiency import EfficiencyReward
from coding_framework.rewards.style import StyleReward


class CompositeReward(BaseRewardFunction):
    """``sum(w_i * r_i) / sum(w_i)``, clipped. Weights come from ``RewardConfig.weights``
    (the shipped ``reward_weights`` config; default 0.7 / 0.2 / 0.1). Zero-weight parts are not computed."""

    name = "composite"

    def __init__(self, config: RewardConfig | None = None, grader: Grader | None = None) -> None:
        super().__init__(config, grader)
        self.parts: dict[str, BaseRewardFunction] = {
            "correctness": CorrectnessReward(self.config, grader),
            "style": StyleReward(self.config, grader),
            "efficiency": EfficiencyReward(self.config, grader),
        }

    @property
    def grader(self) -> Grader:
        grader = super().grader
        for part in getattr(self, "parts", {}).values():
            part._grader = grader
        return grader

    def score_batch(
        self, items: Sequence[Item], results: Sequence[ExecutionResult] | None = None
    ) -> list[RewardOutput]:
        weights = self.config.weights.model_dump()
        active = {name: w for name, w in weights.items() if w > 0}
        if results is None:
            results = self.execute(items)
        per_part = {name: self.parts[name].score_batch(items, results) for name in active}
        total = sum(active.values())
        outs = []
        for i, res in enumerate(results):
            raw = sum(w * per_part[name][i].value for name, w in active.items()) / total
            details = {name: per_part[name][i].value for name in active}
            details["passed"] = res.passed
            outs.append(RewardOutput(value=clip(raw, self.config.clip), raw=raw, details=details))
        return outs
