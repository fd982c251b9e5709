"""Solution-prefix guidance: RL on problems the policy never solves, with the start of their reference
solution given (``training.rollouts.guidance``)."""

from __future__ import annotations

from pydantic import Field

from coding_framework.config.loader import StrictModel

__all__ = ["GuidanceConfig"]


class GuidanceConfig(StrictModel):
    """Training problems whose stored pass rate (`data.pass_rates`) is below `below` train with the first
    lines of their reference solution given as the start of the Generator's answer (never trained on): a
    problem where every sample fails becomes one where a group can mix passes and fails. The given share of
    lines falls linearly from `share` at the first step to none at `fade_steps`, so the policy ends up
    writing the whole program. With `data.pass_rate_band`, these problems train beside the band's; a problem
    without a reference solution is left out. Evaluation and the gate never see a prefix. The local trainer's
    (`train`): `verl-train` refuses it.
    """

    below: float = Field(0.05, gt=0, le=1, description="Guide the problems whose pass rate is below this.")
    share: float = Field(
        0.5, gt=0, lt=1, description="Share of the reference solution's lines given at the first step."
    )
    fade_steps: int | None = Field(
        None, ge=1, description="The step by which nothing is given any more; null: the run's `steps`."
    )
