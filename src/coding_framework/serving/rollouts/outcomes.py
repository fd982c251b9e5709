"""What a graded answer was, and where its grade came from: pure functions.

The grader tells more than pass or fail. An answer is ``passed``, ``failed`` (it ran and failed its tests),
``unparseable`` (no code, or a program Python cannot parse), ``crashed`` (an exception before the tests
finished, killed by a signal, out of memory) or ``timed_out``. A grade's source is ``client`` (a client's
/v1/solve tests) or ``probe`` (the rollout's probe set); the tests compare the arms source by source
(``strata``). Probes send each problem to both arms, so their outcomes also come as pairs (`Pairs`: the
champion's outcome, the candidate's): where a rollout has pairs, the probe stratum is the paired one.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from enum import StrEnum
from typing import Literal

from coding_framework.serving.rollouts.stats import Paired, Stratum

__all__ = ["SOURCES", "Counts", "Outcome", "Pairs", "Source", "classify", "pair_key", "strata"]

Source = Literal["client", "probe"]
SOURCES: tuple[Source, ...] = ("client", "probe")


class Outcome(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    UNPARSEABLE = "unparseable"
    CRASHED = "crashed"
    TIMED_OUT = "timed_out"


# Per arm: per source, the count of each outcome.
Counts = Mapping[Source, Mapping[Outcome, int]]
# Probe pairs: (the champion's outcome, the candidate's) -> count.
Pairs = Mapping[tuple[Outcome, Outcome], int]

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


def pair_key(champion: Outcome, candidate: Outcome) -> str:
    """How a pair is named in a rollout's status and state file: ``"passed,unparseable"``."""
    return f"{champion.value},{candidate.value}"


def strata(champion: Counts, candidate: Counts, good: frozenset[Outcome], pairs: Pairs | None = None
           ) -> list[Stratum]:
    """Per source, each arm's (answers in ``good``, graded answers); with ``pairs``, the probe stratum is
    the paired table of them instead (probe answers whose partner got no grade are left out of it)."""
    def arm(counts: Counts, source: Source) -> tuple[int, int]:
        by = counts.get(source, {})
        return sum(n for o, n in by.items() if o in good), sum(by.values())

    out: list[Stratum] = [(arm(champion, "client"), arm(candidate, "client"))]
    if not pairs:
        return [*out, (arm(champion, "probe"), arm(candidate, "probe"))]
    cells = [0, 0, 0, 0]  # both, champion only, candidate only, neither
    for (a, b), n in pairs.items():
        cells[2 * (a not in good) + (b not in good)] += n
    return [*out, Paired(*cells)]
