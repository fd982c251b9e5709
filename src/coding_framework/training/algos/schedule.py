"""Pure schedules of the training loop: learning rate, sampling temperature, curriculum, problem order.

Each is a function of the step (and the seed), so a resumed run recomputes exactly what an
uninterrupted one would have used; the only state is the problem sampler's cursor, saved in checkpoints.
What a run draws is a ``Task``: a problem, or a repository task (``data.repository``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from coding_framework.config.training import CurriculumConfig, OptimConfig, RolloutConfig
from coding_framework.problems import Difficulty, Problem
from coding_framework.repotasks import RepoTask
from coding_framework.training.algos.seeds import seeded_random

__all__ = [
    "ProblemSampler", "Task", "difficulty_weights", "lr_factor", "rated_difficulty", "temperature_at",
]

Task = Problem | RepoTask
"""What an episode works on. A run's tasks are all of one kind (``data.repository`` or not)."""


def lr_factor(step: int, total: int, config: OptimConfig) -> float:
    """Multiplier of the peak LR at optimizer step ``step`` of ``total``: linear warmup, then the decay."""
    if step < config.warmup_steps:
        return (step + 1) / config.warmup_steps
    if config.schedule == "constant":
        return 1.0
    progress = min(1.0, (step - config.warmup_steps) / max(1, total - config.warmup_steps))
    shape = 1.0 - progress if config.schedule == "linear" else 0.5 * (1.0 + math.cos(math.pi * progress))
    return config.min_lr_ratio + (1.0 - config.min_lr_ratio) * shape


def temperature_at(step: int, total: int, config: RolloutConfig) -> float:
    """Sampling temperature of training step ``step``: linear from ``temperature`` to ``temperature_end``."""
    if config.temperature_end is None or total <= 1:
        return config.temperature
    frac = min(1.0, step / (total - 1))
    return config.temperature + frac * (config.temperature_end - config.temperature)


def rated_difficulty(problem: Task, by_pass_rate: bool) -> Difficulty:
    """The difficulty a curriculum weighs ``problem`` by: its label, or with ``by_pass_rate`` the bucket
    of its stored pass rate (>= 2/3: easy, >= 1/3: medium, else hard) when it has one (repository tasks
    have none)."""
    if not by_pass_rate or isinstance(problem, RepoTask) or problem.pass_rate is None:
        return problem.difficulty
    return "easy" if problem.pass_rate >= 2 / 3 else "medium" if problem.pass_rate >= 1 / 3 else "hard"


def difficulty_weights(step: int, config: CurriculumConfig) -> dict[str, float]:
    """Sampling weight of each difficulty at ``step`` (uniform when the curriculum is off)."""
    if not config.enabled:
        return {"easy": 1.0, "medium": 1.0, "hard": 1.0}
    frac = min(1.0, step / config.ramp_steps)
    return {d: config.start[d] + frac * (config.end[d] - config.start[d]) for d in ("easy", "medium", "hard")}


class ProblemSampler:
    """Draws each step's problems: without replacement through seeded shuffles of the pool, or, with a
    curriculum or per-problem ``weights`` (sources mixed by weight), by weight (distinct problems within a
    step). ``cursor`` counts draws so far."""

    def __init__(self, problems: Sequence[Task], seed: int, curriculum: CurriculumConfig,
                 weights: Sequence[float] | None = None) -> None:
        if not problems:
            raise ValueError("no training problems: check data.families and data.synthetic_per_family")
        if weights is not None and len(weights) != len(problems):
            raise ValueError(f"{len(weights)} weights for {len(problems)} problems")
        self.problems = list(problems)
        self.seed = seed
        self.curriculum = curriculum
        self.weights = list(weights) if weights is not None else None
        self.cursor = 0

    def draw(self, step: int, n: int) -> list[Task]:
        if n > len(self.problems):
            raise ValueError(
                f"rollout.problems_per_step={n} exceeds the {len(self.problems)} training problems"
            )
        weighted = self.curriculum.enabled or self.weights is not None
        picked = self._weighted(step, n) if weighted else self._sequential(n)
        self.cursor += n
        return picked

    def extra(self, step: int, round_: int, n: int) -> list[Task]:
        """``n`` distinct problems for a refill round of ``step``: seeded by the step and round alone, so
        refills leave ``cursor`` (and every later step's draw) as they were."""
        rng = seeded_random(self.seed, "refill", step, round_)
        return [self.problems[i] for i in rng.sample(range(len(self.problems)), min(n, len(self.problems)))]

    def _epoch_order(self, epoch: int) -> list[int]:
        order = list(range(len(self.problems)))
        seeded_random(self.seed, "epoch", epoch).shuffle(order)
        return order

    def _sequential(self, n: int) -> list[Task]:
        out: list[Task] = []
        position = self.cursor
        while len(out) < n:
            epoch, offset = divmod(position, len(self.problems))
            out.append(self.problems[self._epoch_order(epoch)[offset]])
            position += 1
        return out

    def _weighted(self, step: int, n: int) -> list[Task]:
        weights = difficulty_weights(step, self.curriculum)
        rng = seeded_random(self.seed, "curriculum", step)
        pool = list(range(len(self.problems)))
        chosen: list[int] = []
        for _ in range(n):
            w = [weights[rated_difficulty(self.problems[i], self.curriculum.by_pass_rate)]
                 * (self.weights[i] if self.weights is not None else 1.0) for i in pool]
            if sum(w) <= 0:
                w = [1.0] * len(pool)
            chosen.append(pool.pop(rng.choices(range(len(pool)), weights=w)[0]))
        return [self.problems[i] for i in chosen]
