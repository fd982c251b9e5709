"""Reward configuration: composite weights and the per-reward knobs."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from coding_framework.config.loader import StrictModel

# Weights of the rewards that ship with the package; a name left out of `weights` keeps its weight here.
DEFAULT_WEIGHTS: dict[str, float] = {"correctness": 0.7, "style": 0.2, "efficiency": 0.1}
# The key a user sets to score in-process verdicts: `allow_in_process_tier` of the `RewardConfig` that a
# training config holds at `reward.function`. Every message that names the opt-in names this.
IN_PROCESS_OPT_IN = "reward.function.allow_in_process_tier"


class RewardConfig(StrictModel):
    """The composite reward's weights and the knobs of each reward."""

    weights: dict[str, Annotated[float, Field(ge=0)]] = Field(
        default_factory=lambda: dict(DEFAULT_WEIGHTS),
        description="Weight of each reward in the composite, by its registered name "
        "(`coding_framework.rewards.REWARDS`). Names left out keep their default (correctness 0.7, "
        "style 0.2, efficiency 0.1; 0 for any other reward); at least one weight must be positive. The "
        "config layer cannot see the registry, so `CompositeReward` rejects unknown names when it is built.",
    )
    correctness_mode: Literal["binary", "fraction"] = Field(
        "binary", description="`binary`: 1 only if every test passes; `fraction`: share of tests passed. "
        "Where the prompt shows the tests (MBPP's does), `fraction` pays a program that returns one "
        "assert's expected value: GRPO on `smollm2-135m` learned exactly that (docs/real_model.md)."
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
    security_max_issues: int = Field(
        5, ge=1, description="flake8-bandit findings at which the security reward reaches its floor."
    )
    security_cap: float | None = Field(
        None,
        description="A hard constraint: the composite reward of a program with a high-severity security "
        "finding (`rewards.security.HIGH_SEVERITY`) is at most this; null: no cap.",
    )
    clip: float = Field(1.0, gt=0, description="Every reward is clipped to [-clip, clip].")
    allow_in_process_tier: bool = Field(
        False,
        description="Score verdicts of the in_process trust tier (BigCodeBench: the tests run inside the "
        "submission's process, so a submission can forge a pass). Off: rewards raise UntrustedTierError "
        "on such problems; turn it on only for models you trust not to tamper (docs/trust_tiers.md). In a "
        f"training config: `{IN_PROCESS_OPT_IN}`.",
    )

    @field_validator("weights")
    @classmethod
    def _over_defaults(cls, weights: dict[str, float]) -> dict[str, float]:
        # The defaults' order comes first: the composite sums in this order, never in the YAML's.
        merged = {**DEFAULT_WEIGHTS, **weights}
        if not any(w > 0 for w in merged.values()):
            raise ValueError("at least one reward weight must be positive (defaults: 0.7 / 0.2 / 0.1)")
        return merged

    @model_validator(mode="after")
    def _tolerance_below_max_ratio(self) -> RewardConfig:
        if self.efficiency_tolerance >= self.efficiency_max_ratio:
            raise ValueError(
                f"efficiency_tolerance ({self.efficiency_tolerance}) must be below efficiency_max_ratio "
                f"({self.efficiency_max_ratio})"
            )
        return self
