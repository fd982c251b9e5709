"""The one evaluation path: repeat each problem, grade the final programs, group by task, pass@k.

``CodingSupervisor.evaluate`` (a benchmark), ``training.run.heldout`` (the held-out problems during
training) and ``evaluation.samples`` (a samples file, whose programs may be C++) all grade through
``Grader.grade_many`` and score through these functions, so pass@k means the same thing everywhere. How
the programs are produced (a workflow, a lockstep rollout, a file) stays with the caller.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from coding_framework.config.review_credit import ReviewCreditConfig
from coding_framework.evaluation.passk import summarize
from coding_framework.grading import ExecutionResult, Grader
from coding_framework.problems import Problem
from coding_framework.rewards.review_credit import review_outcomes, usefulness_rate

if TYPE_CHECKING:
    from coding_framework.agents.executor import AsyncGrader

__all__ = [
    "Scores", "agrade", "family", "grade", "pass_at_k_by_task", "repeat", "review_usefulness", "score",
]


@dataclass(frozen=True)
class Scores:
    """What an evaluation reports.

    Attributes:
        pass_at_k: mean unbiased pass@k over tasks (``{"pass@1": ...}``), for each k that every task has
            at least k samples for.
        by_family: share of passing samples per family (see :func:`family`), families sorted by name.
        by_task: share of passing samples per task, in first-seen order (what paired tests compare).
    """

    pass_at_k: dict[str, float]
    by_family: dict[str, float]
    by_task: dict[str, float]


def repeat(problems: Sequence[Problem], n: int) -> list[Problem]:
    """The episodes to run: each problem ``n`` times in a row, problems in order.

    Rollout seeds follow an episode's position, so this order is part of every reported number.
    """
    if n < 1:
        raise ValueError(f"need at least 1 sample per problem, got {n}")
    return [p for p in problems for _ in range(n)]


def grade(
    grader: Grader, problems: Sequence[Problem], programs: Sequence[str], progress: bool = False
) -> list[ExecutionResult]:
    """Grade ``programs[i]`` against ``problems[i]`` in the sandbox, concurrently; results in input order."""
    items = list(zip(problems, programs, strict=True))
    return grader.grade_many(items, progress="grading" if progress else False)


async def agrade(
    grader: AsyncGrader, problems: Sequence[Problem], programs: Sequence[str]
) -> list[ExecutionResult]:
    """:func:`grade` from inside an event loop, through the grader's async API."""
    pairs = zip(problems, programs, strict=True)
    return list(await asyncio.gather(*(grader.agrade(p, program) for p, program in pairs)))


def pass_at_k_by_task(
    task_ids: Iterable[str], passed: Iterable[bool], ks: Iterable[int] = (1, 10, 100)
) -> dict[str, float]:
    """Group the verdicts by task (tasks in order of first appearance) and average pass@k over tasks."""
    by_task: dict[str, list[bool]] = defaultdict(list)
    for task_id, ok in zip(task_ids, passed, strict=True):
        by_task[task_id].append(bool(ok))
    return summarize(by_task, ks)


def family(problem: Problem) -> str:
    """The group a problem's pass rate counts under: its first tag (a synthetic family), else its source."""
    return problem.tags[0] if problem.tags else problem.source


def score(
    problems: Sequence[Problem], results: Sequence[ExecutionResult], ks: Iterable[int] = (1, 10, 100)
) -> Scores:
    """pass@k and per-family pass rates of graded episodes; ``results[i]`` grades one of ``problems[i]``."""
    passed = [r.passed for r in results]
    families: dict[str, list[bool]] = defaultdict(list)
    tasks: dict[str, list[bool]] = defaultdict(list)
    for p, ok in zip(problems, passed, strict=True):
        families[family(p)].append(ok)
        tasks[p.task_id].append(ok)
    return Scores(
        pass_at_k=pass_at_k_by_task((p.task_id for p in problems), passed, ks),
        by_family={k: sum(v) / len(v) for k, v in sorted(families.items())},
        by_task={k: sum(v) / len(v) for k, v in tasks.items()},
    )


def review_usefulness(
    states: Iterable[Mapping[str, Any]], config: ReviewCreditConfig | None = None
) -> tuple[float | None, int]:
    """The review usefulness rate of finished episodes (their final graph states): the share of reviews of
    failing drafts after which the next draft passed more tests, and how many such reviews a revision
    followed (the rate is None when none did)."""
    cfg = config or ReviewCreditConfig()
    return usefulness_rate(o for state in states for o in review_outcomes(state.get("rounds", []), cfg))
