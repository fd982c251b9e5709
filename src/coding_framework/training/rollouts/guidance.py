"""Solution-prefix guidance (``data.guidance``): a problem the policy never solves starts its answer with the
first lines of its reference solution, fewer as the run goes on."""

from __future__ import annotations

from collections.abc import Sequence

from coding_framework.config.guidance import GuidanceConfig
from coding_framework.problems import Problem
from coding_framework.training.algos.schedule import Task

__all__ = ["answer_prefix", "given_share", "guided"]


def given_share(guidance: GuidanceConfig, step: int, steps: int) -> float:
    """The share of a reference solution's lines given at ``step`` (0-based, as the trainer counts):
    ``share`` at the first step, falling linearly to 0 at ``fade_steps`` (default ``steps``)."""
    fade = guidance.fade_steps or steps
    return guidance.share * max(0.0, 1 - step / fade)


def answer_prefix(problem: Problem, share: float) -> str | None:
    """The opening of ``problem``'s first reference solution, in the python block the Generator answers in:
    ``share`` of its lines, rounded down; None when that is no line at all."""
    lines = problem.solutions[0].replace("\r\n", "\n").rstrip().split("\n")
    n = int(share * len(lines))
    return "```python\n" + "\n".join(lines[:n]) + "\n" if n else None


def guided(tasks: Sequence[Task], guidance: GuidanceConfig, step: int, steps: int) -> list[Task]:
    """``tasks`` with an answer prefix on each problem below ``guidance.below``'s pass rate at ``step``."""
    share = given_share(guidance, step, steps)
    return [
        t.model_copy(update={"answer_prefix": answer_prefix(t, share)})
        if isinstance(t, Problem) and t.solutions and t.pass_rate is not None and t.pass_rate < guidance.below
        else t
        for t in tasks
    ]
