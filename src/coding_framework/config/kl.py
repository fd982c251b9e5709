"""KL regularization settings: where the KL to the frozen reference policy goes, how it is estimated and
weighted, and when it stops a run. ``training.algos.kl`` implements them with verl's code."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from coding_framework.config.loader import StrictModel

__all__ = ["KLConfig", "KLControllerName", "KLEstimator", "KLMode"]

KLMode = Literal["none", "reward", "loss"]
KLEstimator = Literal["kl", "k1", "abs", "mse", "k2", "low_var_kl", "k3", "k1+", "k3+", "low_var_kl+"]
KLControllerName = Literal["fixed", "adaptive"]


class KLConfig(StrictModel):
    """Where the KL to the reference goes, how it is estimated and weighted, and when it stops training."""

    mode: KLMode = Field(
        "none", description="`reward`: penalize token rewards; `loss`: add to the policy loss; `none`: no "
        "reference model is kept at all (unless `stop_kl` needs one).")
    estimator: KLEstimator = Field(
        "low_var_kl", description="Per-token estimator (verl `kl_penalty` name; Schulman's k1/k2/k3).")
    coef: float = Field(0.001, ge=0, description="Initial beta (`reward`) or the KL loss weight (`loss`).")
    controller: KLControllerName = Field(
        "fixed", description="`adaptive` moves beta toward `target_kl` (mode `reward` only).")
    target_kl: float = Field(0.1, gt=0, description="Adaptive controller: the per-token KL it aims at.")
    horizon: int = Field(10000, gt=0, description="Adaptive controller: samples over which beta adapts.")
    stop_kl: float | None = Field(
        None, gt=0, description="Early-stop when the mean per-token KL to the reference exceeds this for "
        "`stop_patience` consecutive steps; null never stops.")
    stop_patience: int = Field(1, ge=1, description="Consecutive over-threshold steps before stopping.")

    @model_validator(mode="after")
    def _adaptive_needs_reward(self) -> KLConfig:
        if self.controller == "adaptive" and self.mode != "reward":
            raise ValueError("kl.controller: adaptive adjusts the reward penalty; set kl.mode: reward or use "
                             "kl.controller: fixed")
        return self
