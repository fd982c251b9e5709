"""Test-strength filtering: measure every problem's kill rate, flag the weak ones, optionally strengthen them.

With ``augment``, flagged problems get differential asserts (:mod:`coding_framework.curation.strengthen`)
and are measured again on the same mutants; the stronger version is kept when its kill rate rose.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from coding_framework.curation.strength import Strength, measure_strength, with_strength
from coding_framework.curation.strengthen import strengthen
from coding_framework.grading import Grader
from coding_framework.problems import Problem


@dataclass
class FilterReport:
    """The problems carrying their kill rates, each problem's :class:`Strength`, and what was flagged."""

    problems: list[Problem]
    strengths: list[Strength]
    flagged: list[str] = field(default_factory=list)
    # task_id -> (kill rate before, after), for the problems whose strengthened tests were kept.
    strengthened: dict[str, tuple[float, float]] = field(default_factory=dict)

    def kept(self) -> list[Problem]:
        """The problems not flagged (after any strengthening)."""
        flagged = set(self.flagged)
        return [p for p in self.problems if p.task_id not in flagged]


def filter_by_strength(
    problems: Sequence[Problem],
    grader: Grader,
    *,
    min_kill_rate: float = 0.8,
    cap: int | None = 20,
    augment: bool = False,
    seed: int = 0,
    progress: bool = False,
) -> FilterReport:
    """Measure, flag below ``min_kill_rate`` and, with ``augment``, strengthen the flagged problems."""
    strengths = measure_strength(
        problems, grader, cap=cap, seed=seed, progress="mutants" if progress else False
    )
    out = [with_strength(p, s) for p, s in zip(problems, strengths, strict=True)]
    report = FilterReport(out, strengths)
    weak = [i for i, s in enumerate(strengths) if s.flagged(min_kill_rate)]
    if augment and weak:
        _strengthen(report, weak, grader, cap, seed, progress)
    report.flagged = [s.task_id for s in report.strengths if s.flagged(min_kill_rate)]
    return report


def _strengthen(
    report: FilterReport, weak: list[int], grader: Grader, cap: int | None, seed: int, progress: bool
) -> None:
    grown = strengthen(
        [report.problems[i] for i in weak], grader, seed=seed, progress="probing" if progress else False
    )
    changed = [
        (i, g) for i, g in zip(weak, grown, strict=True) if g.test_code != report.problems[i].test_code
    ]
    again = measure_strength(
        [g for _, g in changed], grader, cap=cap, seed=seed, progress="re-grading" if progress else False
    )
    for (i, grown_problem), strength in zip(changed, again, strict=True):
        before, after = report.strengths[i].kill_rate, strength.kill_rate
        if before is not None and after is not None and after > before:
            report.problems[i] = with_strength(grown_problem, strength)
            report.strengths[i] = strength
            report.strengthened[grown_problem.task_id] = (before, after)
