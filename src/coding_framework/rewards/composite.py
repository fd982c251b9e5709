"""Weighted sum of the registered rewards named in the config; each program runs in the sandbox once."""

from __future__ import annotations

from collections.abc import Sequence

from coding_framework.config.rewards import RewardConfig
from coding_framework.grading import ExecutionResult, Grader
from coding_framework.rewards.base import BaseRewardFunction, Item, RewardOutput, clip, get_reward
from coding_framework.rewards.security import HIGH_SEVERITY, security_findings
from coding_framework.rewards.tiers import refuse_in_process


class CompositeReward(BaseRewardFunction):
    """``sum(w_i * r_i) / sum(w_i)``, clipped, over the rewards ``RewardConfig.weights`` names
    (the shipped ``reward_weights`` config; default correctness 0.7, style 0.2, efficiency 0.1), in that
    dict's order. Each name must be registered (``REWARDS``): an unknown one is a ``ConfigError`` here that
    lists the valid names. Zero-weight parts are not computed. With ``security_cap``, a program with a
    high-severity security finding scores at most the cap."""

    name = "composite"

    def __init__(self, config: RewardConfig | None = None, grader: Grader | None = None) -> None:
        super().__init__(config, grader)
        self.parts: dict[str, BaseRewardFunction] = {
            name: get_reward(name)(self.config, grader) for name in self.config.weights
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
        active = {name: w for name, w in self.config.weights.items() if w > 0}
        refuse_in_process(self.config, [p for p, _ in items], results)
        if results is None:
            results = self.execute(items)
            refuse_in_process(self.config, [p for p, _ in items], results)
        per_part = {name: self.parts[name].score_batch(items, results) for name in active}
        cap = self.config.security_cap
        high = ([bool(set(codes) & HIGH_SEVERITY) for codes in security_findings([p for _, p in items])]
                if cap is not None else [False] * len(items))
        total = sum(active.values())
        outs = []
        for i, res in enumerate(results):
            raw = sum(w * per_part[name][i].value for name, w in active.items()) / total
            details = {name: per_part[name][i].value for name in active}
            details["passed"] = res.passed
            value = clip(raw, self.config.clip)
            if high[i] and cap is not None:
                details["security_capped"] = True
                value = min(value, cap)
            outs.append(RewardOutput(value=value, raw=raw, details=details))
        return outs
