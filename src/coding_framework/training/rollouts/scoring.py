"""From rewarded episodes to training rows: reward shaping (normalisation, clipping) and rollout metrics.

Masked episodes (``Episode.masked``: an infrastructure failure) train nothing: ``trained_episodes`` leaves
them out before shaping, ``to_trajectories`` emits no row for them, and the metrics describe the episodes
that train while counting the masked ones.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from coding_framework.config.review_credit import ReviewCreditConfig
from coding_framework.config.training import EpisodeRewardConfig
from coding_framework.problems import Problem
from coding_framework.repotasks import RepoTask
from coding_framework.rewards.review_credit import ReviewOutcome, review_outcomes, usefulness_rate
from coding_framework.training.rollouts.episodes import REQUEST_FAILED, Episode, RolloutBatch
from coding_framework.training.rollouts.repository import repository_metrics
from coding_framework.training.trajectory import Trajectory, review_trajectories, trajectories_from_episode

__all__ = [
    "REVIEWER", "RunningMoments", "episode_reviews", "episode_rewards", "review_metrics", "rollout_metrics",
    "round_penalized", "shape_rewards", "to_trajectories", "trained_episodes",
]

REVIEWER = "reviewer"


@dataclass
class RunningMoments:
    """Running mean and variance of every reward seen (Chan et al.'s parallel update); checkpointed."""

    count: float = 0.0
    mean: float = 0.0
    m2: float = 0.0

    def update(self, values: Sequence[float]) -> None:
        n = len(values)
        if n == 0:
            return
        b_mean = sum(values) / n
        b_m2 = sum((v - b_mean) ** 2 for v in values)
        total = self.count + n
        delta = b_mean - self.mean
        self.mean += delta * n / total
        self.m2 += b_m2 + delta**2 * self.count * n / total
        self.count = total

    @property
    def std(self) -> float:
        return math.sqrt(self.m2 / self.count) if self.count > 1 else 1.0

    def state_dict(self) -> dict[str, float]:
        return {"count": self.count, "mean": self.mean, "m2": self.m2}

    def load_state_dict(self, state: dict[str, float]) -> None:
        self.count, self.mean, self.m2 = state["count"], state["mean"], state["m2"]


def round_penalized(value: float, rounds: int, round_penalty: float) -> float:
    """An episode's reward before shaping: its final program's ``value``, less ``round_penalty`` per
    revision (``rounds`` - 1)."""
    return value - round_penalty * max(0, rounds - 1)


def trained_episodes(episodes: Sequence[Episode]) -> list[Episode]:
    """The episodes that train: all but the masked ones."""
    return [e for e in episodes if e.masked is None]


def episode_rewards(episodes: Sequence[Episode], settings: EpisodeRewardConfig) -> list[float]:
    """Each episode's reward before shaping (``round_penalized``)."""
    return [round_penalized(e.reward.value, e.rounds, settings.round_penalty) for e in episodes]


def shape_rewards(
    raw: Sequence[float], settings: EpisodeRewardConfig, moments: RunningMoments
) -> list[float]:
    """Normalise (``batch``: this step's mean/std; ``running``: all steps so far) then clip."""
    values = list(raw)
    if settings.normalize == "batch" and len(values) > 1:
        mean = sum(values) / len(values)
        std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
        values = [(v - mean) / (std + 1e-6) for v in values]
    elif settings.normalize == "running":
        moments.update(values)
        values = [(v - moments.mean) / (moments.std + 1e-6) for v in values]
    if settings.clip is not None:
        values = [max(-settings.clip, min(settings.clip, v)) for v in values]
    return values


def to_trajectories(
    episodes: Sequence[Episode],
    rewards: Sequence[float],
    roles: Sequence[str],
    step: int,
    review: ReviewCreditConfig | None = None,
) -> list[Trajectory]:
    """Each episode's trained-role rows, each role with its own credit; a masked episode has none.

    The Generator's rows carry the episode's shaped reward, grouped as ``<step>/<problem slot>``. With
    ``reviewer`` among ``roles``, each recorded review becomes a row of its own carrying its review credit
    (``rewards.review_credit``, weights ``review``), grouped as ``<step>/<problem slot>/reviewer``.
    """
    rows: list[Trajectory] = []
    for episode, reward in zip(episodes, rewards, strict=True):
        if episode.masked is not None:
            continue
        rows += trajectories_from_episode(
            episode.state,
            [r for r in roles if r != REVIEWER],
            reward=reward,
            group_id=f"{step}/{episode.group}",
            metadata={"episode": episode.index, "raw_reward": episode.reward.value},
        )
    if REVIEWER in roles:
        for episode in trained_episodes(episodes):
            credit = {o.round - 1: o.reward for o in episode_reviews(episode, review or ReviewCreditConfig())}
            rows += review_trajectories(
                episode.state, credit, group_id=f"{step}/{episode.group}/{REVIEWER}",
                metadata={"episode": episode.index},
            )
    return rows


def episode_reviews(episode: Episode, config: ReviewCreditConfig) -> list[ReviewOutcome]:
    return review_outcomes(episode.state.get("rounds", []), config)


def review_metrics(episodes: Sequence[Episode], config: ReviewCreditConfig) -> dict[str, float]:
    """``review/usefulness_rate`` (the share of reviews of failing drafts after which the next draft passed
    more tests), ``review/judged`` (how many such reviews a revision followed), the mean review credit and
    the share of failing drafts the Reviewer approved. Empty when no episode was reviewed."""
    outcomes = [o for e in episodes for o in episode_reviews(e, config)]
    if not outcomes:
        return {}
    rate, judged = usefulness_rate(outcomes)
    failing = [o for o in outcomes if not o.draft_passed]
    out = {
        "review/reviews": float(len(outcomes)),
        "review/judged": float(judged),
        "review/reward_mean": sum(o.reward for o in outcomes) / len(outcomes),
    }
    if rate is not None:
        out["review/usefulness_rate"] = rate
    if failing:
        out["review/approved_failing_share"] = sum(o.verdict == "approve" for o in failing) / len(failing)
    return out


def _std(values: Sequence[float]) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


def rollout_metrics(batch: RolloutBatch, tools: Sequence[str] = ()) -> dict[str, float]:
    """``reward_mean``/``reward_std`` (raw rewards), ``pass_rate``, rounds, tokens and the share of groups
    whose episodes all got the same reward (they carry no signal for group-relative algorithms), over the
    episodes that train (``episodes`` counts all; ``rollout/request_failed`` those a failed model request
    ended, which train nothing); with guided problems (``data.guidance``), their episodes'
    count and pass rate (``rollout/guided*``); with repository tasks, ``repository_metrics`` too (each
    of ``tools``, the tools offered, counted). A batch whose every episode was masked reports 0 for the
    means."""
    repository = any(isinstance(e.problem, RepoTask) for e in batch.episodes)
    extra = repository_metrics(batch.episodes, tools) if repository else {}
    extra["rollout/request_failed"] = float(sum(REQUEST_FAILED in e.state for e in batch.episodes))
    eps = trained_episodes(batch.episodes)
    if not eps:
        return {"reward_mean": 0.0, "reward_std": 0.0, "pass_rate": 0.0,
                "episodes": float(len(batch.episodes)), "generated_tokens": float(batch.generated_tokens),
                "flat_group_share": 0.0, **extra}
    rewards = [e.reward.value for e in eps]
    groups: dict[int, list[float]] = {}
    for e in eps:
        groups.setdefault(e.group, []).append(e.reward.value)
    flat = sum(1 for g in groups.values() if len(g) > 1 and max(g) == min(g))
    out: dict[str, Any] = {
        "reward_mean": sum(rewards) / len(rewards),
        "reward_std": _std(rewards),
        "pass_rate": sum(e.passed for e in eps) / len(eps),
        "first_draft_pass_rate": sum(bool(e.state.get("rounds", [{}])[0].get("passed")) for e in eps)
        / len(eps),
        "rounds_mean": sum(e.rounds for e in eps) / len(eps),
        "episodes": float(len(batch.episodes)),
        "generated_tokens": float(batch.generated_tokens),
        "flat_group_share": flat / max(1, len(groups)),
    }
    if guided := [e for e in eps if isinstance(e.problem, Problem) and e.problem.answer_prefix]:
        out["rollout/guided"] = float(len(guided))
        out["rollout/guided_pass_rate"] = sum(e.passed for e in guided) / len(guided)
    for part in ("correctness", "style", "efficiency"):
        vals = [e.reward.details[part] for e in eps if part in e.reward.details]
        if vals:
            out[f"reward/{part}"] = sum(vals) / len(vals)
    if repository:  # no drafts, no rounds: the repository figures stand for them
        del out["first_draft_pass_rate"], out["rounds_mean"]
    return {**out, **extra}
