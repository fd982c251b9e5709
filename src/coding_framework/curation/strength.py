"""Test strength by mutation testing: the share of a problem's reference mutants its tests reject.

Every mutant (:mod:`coding_framework.curation.mutants`) is graded by the one grader, all problems in one
batch. A mutant is killed when it does not pass (a failed test, an error or a timeout). The kill rate is
killed / valid mutants; a problem whose first reference does not pass its own tests gets no kill rate.
Problems below a threshold are flagged: their tests let too many wrong programs through.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from coding_framework.curation.mutants import Mutant, mutants
from coding_framework.grading import Grader
from coding_framework.problems import Problem


@dataclass(frozen=True)
class Strength:
    """The mutation score of one problem's tests."""

    task_id: str
    reference_passed: bool
    killed: int
    total: int
    survivors: list[Mutant] = field(default_factory=list)

    @property
    def kill_rate(self) -> float | None:
        """killed / total valid mutants; None without a passing reference or without mutants."""
        return self.killed / self.total if self.reference_passed and self.total else None

    def flagged(self, min_kill_rate: float) -> bool:
        """The tests are weak: the kill rate is below ``min_kill_rate`` (unmeasured problems are not)."""
        return self.kill_rate is not None and self.kill_rate < min_kill_rate


def problem_mutants(problem: Problem, cap: int | None, seed: int = 0) -> list[Mutant]:
    """The capped, deterministic mutant set of ``problem``'s references (seeded per task)."""
    return mutants(problem.solutions, cap=cap, seed=f"{seed}:{problem.task_id}")


def measure_strength(
    problems: Sequence[Problem],
    grader: Grader,
    cap: int | None = 20,
    seed: int = 0,
    progress: bool | str = False,
) -> list[Strength]:
    """The :class:`Strength` of each problem, in input order; references and mutants graded in one batch."""
    plans = [(p, problem_mutants(p, cap, seed)) for p in problems if p.solutions]
    items: list[tuple[Problem, str]] = []
    for problem, found in plans:
        items.append((problem, problem.solutions[0]))
        items += [(problem, m.program) for m in found]
    results = iter(grader.grade_many(items, progress=progress))
    by_task: dict[str, Strength] = {}
    for problem, found in plans:
        reference = next(results)
        verdicts = [next(results) for _ in found]
        survivors = [m for m, r in zip(found, verdicts, strict=True) if r.passed]
        by_task[problem.task_id] = Strength(
            task_id=problem.task_id,
            reference_passed=reference.passed,
            killed=len(found) - len(survivors),
            total=len(found),
            survivors=survivors,
        )
    return [by_task.get(p.task_id, Strength(p.task_id, False, 0, 0)) for p in problems]


def with_strength(problem: Problem, strength: Strength) -> Problem:
    """``problem`` carrying its measured ``kill_rate`` and mutant count."""
    if strength.task_id != problem.task_id:
        raise ValueError(f"strength of {strength.task_id!r} given for problem {problem.task_id!r}")
    return problem.model_copy(update={"kill_rate": strength.kill_rate, "mutants": strength.total})


def dataset_kill_rate(strengths: Sequence[Strength]) -> dict[str, float | int | None]:
    """Pooled (all mutants) and mean per-problem kill rate of a dataset, with the counts behind them."""
    measured = [s for s in strengths if s.kill_rate is not None]
    killed, total = sum(s.killed for s in measured), sum(s.total for s in measured)
    rates = [s.kill_rate for s in measured if s.kill_rate is not None]
    return {
        "problems": len(strengths),
        "measured": len(measured),
        "mutants": total,
        "killed": killed,
        "pooled_kill_rate": killed / total if total else None,
        "mean_kill_rate": sum(rates) / len(rates) if rates else None,
    }
