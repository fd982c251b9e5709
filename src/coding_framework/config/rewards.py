"""Reward configuration: composite weights and the per-reward knobs."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from coding_framework.config.loader import StrictModel


class RewardWeights(StrictModel):
    correctness: float = Field(0.7, ge=0)
    style: float = Field(0.2, ge=0)
    efficiency: float = Field(0.1, ge=0)

    @model_validator(mode="after")
    def _not_all_zero(self) -> RewardWeights:
        if self.correctness + self.style + self.efficiency <= 0:
            raise ValueError("at least one reward weight must be positive (defaults: 0.7 / 0.2 / 0.1)")
        return self


class RewardConfig(StrictModel):
    weights: RewardWeights = Field(default_factory=RewardWeights)
    correctness_mode: Literal["binary", "fraction"] = Field(
        "binary", description="`binary`: 1 only if every test passes; `fraction`: share of tests passed."
    )
    style_max_issues: int = Field(
        10, ge=1, description="Lint findings at which the style reward reaches its floor."
    )
    efficiency_max_ratio: float = Field(
        10.0,
        gt=1,
        description="Runtime ratio (candidate / reference) at which the efficiency reward reaches -1.",
    )
    efficiency_tolerance: float = Field(
        1.5,
        ge=1,
        description="Runtime ratio up to which a passing program counts as fast as the reference "
        "(CPU time of the same program varies by tens of percent between runs).",
    )
    clip: float = Field(1.0, gt=0, description="Every reward is clipped to [-clip, clip].")

    @model_validator(mode="after")
    def _tolerance_below_max_ratio(self) -> RewardConfig:
        if self.efficiency_tolerance >= self.efficiency_max_ratio:
            raise ValueError(
                f"efficiency_tolerance ({self.efficiency_tolerance}) must be below efficiency_max_ratio "
                f"({self.efficiency_max_ratio})"
            )
        return self
