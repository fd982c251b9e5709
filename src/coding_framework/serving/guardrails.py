"""What a graded answer was, and the guardrails that roll a rollout back on it: pure functions.

The grader tells more than pass or fail. An answer is ``passed``, ``failed`` (it ran and failed its tests),
``unparseable`` (no code, or a program Python cannot parse), ``crashed`` (an exception before the tests
finished, killed by a signal, out of memory) or ``timed_out``. Each of the three failure modes is a
guardrail: its per-arm rate is compared with the same always-valid test as the pass rate
(`serving.stats.compare_strata`, stratified by grade source), and the candidate is rolled back as soon as
one is significantly worse, without waiting for the pass rate.

The error budget ``alpha`` (the chance that an A/A rollout is ever rolled back) is split Bonferroni-style
over every test that can roll back: ``pass_share`` of it to the pass-rate drop, the rest evenly over the
three guardrails and the request-error burst (`error_budget`). ``benchmarks/serving_stats.py`` checks the
A/A rate with all of them on, peeking after every observation.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from coding_framework.serving.stats import Comparison, Verdict, compare_strata

__all__ = [
    "GUARDRAILS",
    "ROLLBACK_TESTS",
    "SOURCES",
    "Breach",
    "Counts",
    "Outcome",
    "Source",
    "breach",
    "classify",
    "error_budget",
    "strata",
]

Source = Literal["client", "probe"]
SOURCES: tuple[Source, ...] = ("client", "probe")


class Outcome(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    UNPARSEABLE = "unparseable"
    CRASHED = "crashed"
    TIMED_OUT = "timed_out"


GUARDRAILS = (Outcome.UNPARSEABLE, Outcome.CRASHED, Outcome.TIMED_OUT)
ROLLBACK_TESTS = ("pass_rate", *GUARDRAILS, "errors")

# Per arm: per source, the count of each outcome.
Counts = Mapping[Source, Mapping[Outcome, int]]

_CRASH_STATUSES = frozenset({"error", "crashed", "memory"})


def classify(program: str, status: str) -> Outcome:
    """The outcome of a graded ``program`` (the one the grader ran) given the grader's ``status``."""
    if status == "passed":
        return Outcome.PASSED
    if not program.strip():
        return Outcome.UNPARSEABLE
    try:
        ast.parse(program)
    except (SyntaxError, ValueError):
        return Outcome.UNPARSEABLE
    if status == "timeout":
        return Outcome.TIMED_OUT
    if status in _CRASH_STATUSES:
        return Outcome.CRASHED
    return Outcome.FAILED


def error_budget(alpha: float, pass_share: float) -> dict[str, float]:
    """Each rollback test's alpha; they sum to ``alpha``, so by the union bound an A/A is rolled back with
    chance at most ``alpha`` (the SRM check has its own ``srm_alpha``)."""
    rest = alpha * (1 - pass_share) / (len(ROLLBACK_TESTS) - 1)
    return {name: alpha * pass_share if name == "pass_rate" else rest for name in ROLLBACK_TESTS}


def strata(champion: Counts, candidate: Counts, good: frozenset[Outcome]) -> list[tuple[tuple[int, int],
                                                                                          tuple[int, int]]]:
    """Per source, each arm's (answers in ``good``, graded answers)."""
    def arm(counts: Counts, source: Source) -> tuple[int, int]:
        by = counts.get(source, {})
        return sum(n for o, n in by.items() if o in good), sum(by.values())

    return [(arm(champion, s), arm(candidate, s)) for s in SOURCES]


@dataclass(frozen=True)
class Breach:
    guardrail: Outcome
    test: Comparison


def breach(champion: Counts, candidate: Counts, alphas: Mapping[str, float], tau: float) -> Breach | None:
    """The first guardrail whose rate is significantly higher on the candidate, else None.

    Each is tested as the rate of answers WITHOUT that failure (higher is better), so a WORSE verdict is a
    significantly higher failure rate.
    """
    for guardrail in GUARDRAILS:
        good = frozenset(Outcome) - {guardrail}
        test = compare_strata(strata(champion, candidate, good), alpha=alphas[guardrail], tau=tau, margin=1.0)
        if test.verdict is Verdict.WORSE:
            return Breach(guardrail, test)
    return None
