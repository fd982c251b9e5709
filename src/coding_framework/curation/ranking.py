"""Difficulty by experiment: a reference policy's empirical pass rate over n samples per problem.

The samples come from any generator (``coding-framework data rank`` runs the workflow with a model spec);
this module turns their graded outcomes into per-problem pass rates and stores them on the problems.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from coding_framework.problems import Problem


def pass_rates(outcomes: Iterable[tuple[str, bool]]) -> dict[str, tuple[float, int]]:
    """``task_id -> (share passed, samples)`` from graded ``(task_id, passed)`` outcomes."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for task_id, passed in outcomes:
        counts[task_id][0] += bool(passed)
        counts[task_id][1] += 1
    return {task: (passed / n, n) for task, (passed, n) in counts.items()}


def with_pass_rates(
    problems: Sequence[Problem],
    outcomes: Iterable[tuple[str, bool]],
    source: str,
    passing: Mapping[str, Sequence[str]] | None = None,
) -> list[Problem]:
    """``problems`` carrying the pass rate ``source`` (a model spec) reached on them. ``passing``: each
    problem's passing programs, added after its reference solutions (each distinct program once), so a warm
    start can learn from the policy's own successes.

    Every problem must have at least one outcome: a missing one means the samples and problems disagree.
    """
    rates = pass_rates(outcomes)
    missing = [p.task_id for p in problems if p.task_id not in rates]
    if missing:
        raise ValueError(f"no graded samples for {len(missing)} problem(s), e.g. {missing[0]!r}")
    return [
        p.model_copy(
            update={
                "pass_rate": rates[p.task_id][0],
                "pass_rate_n": rates[p.task_id][1],
                "pass_rate_source": source,
                "solutions": list(dict.fromkeys([*p.solutions, *(passing or {}).get(p.task_id, ())])),
            }
        )
        for p in problems
    ]


def by_pass_rate(problems: Sequence[Problem]) -> list[Problem]:
    """Easiest first: ranked problems by descending pass rate (ties keep input order), then unranked ones."""
    ranked = sorted((p for p in problems if p.pass_rate is not None), key=lambda p: -(p.pass_rate or 0.0))
    return [*ranked, *(p for p in problems if p.pass_rate is None)]
