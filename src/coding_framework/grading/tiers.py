"""Which trust tier grades a problem: the one place that maps a problem to its tier.

``unittest`` tests (BigCodeBench) run inside the submission's process, in the ``in_process`` tier, where a
submission can forge its own pass; every other format runs in the ``hardened`` judge, outside it. The
grader routes by this, and every gate that refuses the in-process tier asks it (docs/trust_tiers.md).
"""

from __future__ import annotations

from coding_framework.problems.problem import Problem
from coding_framework.sandbox.result import Tier

__all__ = ["Tier", "tier_of"]


def tier_of(problem: Problem) -> Tier:
    return "in_process" if problem.test_format == "unittest" else "hardened"
