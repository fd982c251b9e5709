"""The trust-tier gate of training rewards: in-process verdicts are refused unless the config allows them.

In the in-process tier (BigCodeBench) the tests run inside the submission's process, so a submission can
patch ``unittest`` or the assertions and pass without solving the task. A policy trained on such rewards
learns to do exactly that; see docs/trust_tiers.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from coding_framework.config.errors import ConfigError
from coding_framework.config.rewards import IN_PROCESS_OPT_IN, RewardConfig
from coding_framework.grading import ExecutionResult, tier_of
from coding_framework.problems.problem import Problem


class UntrustedTierError(ConfigError):
    """A reward was asked to score a verdict of the in-process tier without the explicit opt-in."""


def refuse_in_process(
    config: RewardConfig,
    problems: Sequence[Problem],
    results: Sequence[ExecutionResult] | None = None,
) -> None:
    """Raise :class:`UntrustedTierError` if any problem or result is in the in-process tier and
    ``config.allow_in_process_tier`` is false; checked before grading (by ``tier_of``) and after."""
    if config.allow_in_process_tier:
        return
    for i, problem in enumerate(problems):
        in_process = tier_of(problem) == "in_process" or (
            results is not None and results[i].tier == "in_process"
        )
        if in_process:
            raise UntrustedTierError(
                f"{problem.task_id} is graded in the in_process trust tier: its tests run inside the "
                "submission's process, so a submission can forge its own pass. Training rewards refuse "
                f"it; set {IN_PROCESS_OPT_IN}: true to train on it anyway (docs/trust_tiers.md)"
            )
