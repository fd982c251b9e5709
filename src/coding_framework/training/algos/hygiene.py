"""Batch hygiene: what a rollout batch loses or pays before the update.

- Overlong rows: a row whose calls include one cut at ``max_new_tokens`` can be left out of the loss
  (``rollout.mask_overlong``), and DAPO's soft overlong penalty (``rollout.overlong_buffer``) lowers the
  reward of calls that ran into the last ``overlong_buffer`` tokens of the budget, linearly down to
  ``-overlong_penalty`` at the budget (https://arxiv.org/abs/2503.14476, section 3.4).
- Zero-variance groups: a group whose episodes all earned the same reward has no group-relative signal;
  ``flat_groups`` finds them so the rollout can replace them (``rollout.refill_zero_variance``).
"""

from __future__ import annotations

from collections.abc import Sequence

from coding_framework.config.training import RolloutConfig
from coding_framework.training.trajectory import Trajectory

__all__ = ["flat_groups", "overlong_hygiene", "soft_overlong_penalty"]


def soft_overlong_penalty(length: int, max_new_tokens: int, buffer: int, penalty: float) -> float:
    """DAPO's penalty (<= 0) for one call of ``length`` generated tokens."""
    free = max_new_tokens - buffer
    if length <= free:
        return 0.0
    return -penalty * min(1.0, (length - free) / buffer)


def overlong_hygiene(rows: Sequence[Trajectory], config: RolloutConfig
                     ) -> tuple[list[Trajectory], dict[str, float]]:
    """``rows`` with the soft penalty added to their rewards and, with ``mask_overlong``, the rows cut at
    the budget left out; ``batch/overlong_rows`` counts the cut rows either way."""
    kept: list[Trajectory] = []
    cut = 0
    penalties: list[float] = []
    for row in rows:
        overlong = "length" in row.stop_reasons
        cut += overlong
        if overlong and config.mask_overlong:
            continue
        if config.overlong_buffer is not None:
            penalty = min(soft_overlong_penalty(c.length, config.max_new_tokens, config.overlong_buffer,
                                                config.overlong_penalty) for c in row.calls)
            penalties.append(penalty)
            row = row.model_copy(update={"reward": row.reward + penalty})
        kept.append(row)
    metrics = {"batch/overlong_rows": float(cut)}
    if config.mask_overlong:
        metrics["batch/overlong_masked"] = float(len(rows) - len(kept))
    if penalties:
        metrics["batch/overlong_penalty_mean"] = sum(penalties) / len(penalties)
    return kept, metrics


def flat_groups(groups: Sequence[int], rewards: Sequence[float]) -> set[int]:
    """The groups of two or more episodes whose rewards are all equal."""
    members: dict[int, list[float]] = {}
    for g, r in zip(groups, rewards, strict=True):
        members.setdefault(g, []).append(r)
    return {g for g, rs in members.items() if len(rs) > 1 and max(rs) == min(rs)}
