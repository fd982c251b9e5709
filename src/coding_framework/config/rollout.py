"""Rollout policy: how the model server moves traffic to a candidate version, the sequential test that
gates each step, and when it rolls back on its own. ``serving.rollouts.manager`` implements it;
``serving.rollouts.stats`` holds the statistics."""

from __future__ import annotations

import itertools
from typing import Literal

from pydantic import Field, field_validator

from coding_framework.config.loader import StrictModel

__all__ = ["InconclusivePolicy", "RolloutPolicy", "RolloutStrategy"]

RolloutStrategy = Literal["immediate", "shadow", "canary"]
InconclusivePolicy = Literal["rollback", "hold"]


class RolloutPolicy(StrictModel):
    """The statistics, traffic steps and safety limits of a rollout (candidate version vs the champion)."""

    alpha: float = Field(
        0.05, gt=0, lt=1, description="Error budget of the always-valid sequential tests (mSPRT / confidence "
        "sequences): the chance that an A/A rollout is ever rolled back, however often it is looked at. It "
        "is split over the tests that can roll back (`pass_share` to the pass rate, the rest evenly over "
        "the unparseable, crash and timeout guardrails and the error burst; `serving.rollouts.guardrails`).")
    pass_share: float = Field(
        0.5, gt=0, lt=1, description="Share of `alpha` given to the pass-rate test (which also gates "
        "advancing); the guardrails split the rest. More: the pass rate decides sooner, guardrails later.")
    mixture_tau: float = Field(
        0.1, gt=0, le=1, description="Standard deviation of the normal mixture over the pass-rate "
        "difference (the mSPRT prior, Johari et al. 2017). Set it near the smallest drop worth catching: "
        "smaller detects small drops sooner and large ones later.")
    margin: float = Field(
        0.1, gt=0, lt=1, description="Absolute non-inferiority margin: a canary step may advance (or a "
        "shadow candidate be promoted) only once the lower confidence bound of candidate minus champion "
        "pass rate is above -margin (and `relative_margin` holds too). A smaller margin needs many more "
        "graded requests (see `serving.rollouts.stats.power`).")
    relative_margin: float = Field(
        0.2, gt=0, lt=1, description="Relative non-inferiority margin: advancing also needs the lower "
        "confidence bound of candidate - (1 - relative_margin) x champion pass rate above 0, i.e. the "
        "candidate keeps at least 80% (default) of the champion's rate. It binds wherever "
        "relative_margin x the champion's rate < margin, so at low pass rates a candidate that passes "
        "nothing can never be promoted; at a champion rate of 0 nothing can be shown and the rollout ends "
        "inconclusive. Guardrails' rates (answers without each failure mode) are held to both margins too.")
    min_graded: int = Field(
        30, ge=1, description="Graded candidate requests each step needs (counted within the step) before "
        "the verdict may advance it; steps never advance by time alone.")
    error_window: int = Field(
        20, ge=1, description="Error bursts: the number of latest candidate requests looked at.")
    error_burst: int = Field(
        5, ge=1, description="Error bursts: roll back when at least this many of the last `error_window` "
        "candidate requests failed and the candidate's error rate is significantly above the champion's "
        "(same sequential test at `alpha`). No grades are needed for this.")
    srm_alpha: float = Field(
        0.001, gt=0, lt=1, description="Error rate of the sequential sample-ratio-mismatch test (Dirichlet-"
        "multinomial mixture, Lindon & Malek 2022); a mismatch means assignment is broken, so it rolls back.")
    srm_concentration: float = Field(
        100.0, gt=0, description="Concentration of the Dirichlet mixture of the SRM test around the "
        "assigned weights: larger catches small ratio errors sooner and large ones later.")
    shadow_share: float = Field(
        0.2, gt=0, le=1, description="Strategy `shadow`: the share of requests mirrored to the candidate "
        "(its answer is graded and discarded; the client always gets the champion's).")
    steps: list[int] = Field(
        [10, 50, 100], min_length=1, description="Strategy `canary`: the candidate's traffic percent per "
        "step, strictly increasing within 1..100. Each step is gated by the verdict; passing the last "
        "step's gate promotes (`immediate` is one step of 100).")
    pin_table_size: int = Field(
        100_000, ge=1, description="Sessions whose version is remembered (least recently used are "
        "forgotten; a forgotten session hashes to the same bucket, so it only moves if the weights moved).")
    drain_s: float = Field(
        2.0, ge=0, description="Seconds between routing away from a version and retiring it, so requests "
        "in flight finish.")
    max_duration_s: float | None = Field(
        86_400.0, gt=0, description="Budget: seconds a rollout may run without a verdict; then it ends "
        "`inconclusive` (see `on_inconclusive`). null: no limit. A rollout request may set its own.")
    max_graded: int | None = Field(
        10_000, ge=1, description="Budget: graded candidate answers (client and probe) a rollout may take "
        "without a verdict; then it ends `inconclusive`. null: no limit. A rollout request may set its own.")
    on_inconclusive: InconclusivePolicy = Field(
        "rollback", description="When a budget runs out: `rollback` (routes everyone to the champion) or "
        "`hold` (keeps the current split, with the rollback tests on, until an operator aborts).")
    probe_rate_per_s: float = Field(
        0.5, gt=0, le=100, description="Probe sets: problems per second sent to BOTH champion and candidate "
        "when a rollout request gives a probe without `rate_per_s`.")
    probe_concurrency: int = Field(
        2, ge=1, le=64, description="Probe problems in flight at once; a tick with all of them busy is "
        "skipped, so the rate is an upper bound and probes never queue behind clients.")
    poll_interval_s: float = Field(
        1.0, gt=0, description="`coding-framework deploy --wait`: seconds between status polls.")

    @field_validator("steps")
    @classmethod
    def _increasing_percents(cls, steps: list[int]) -> list[int]:
        if any(not 1 <= s <= 100 for s in steps) or any(b <= a for a, b in itertools.pairwise(steps)):
            raise ValueError(f"steps must be strictly increasing percents within 1..100, e.g. [10, 50, 100]; "
                             f"got {steps}")
        return steps
