"""Security from a real linter: ruff's flake8-bandit rules (``S``) per program.

1.0 for no finding, falling linearly to -1.0 at ``security_max_issues``; a high-severity finding (code
execution, shell injection, unsafe deserialisation, SQL built from strings, ...) scores -1. With
``security_cap`` set, the composite reward of a program with a high-severity finding is capped there,
whatever its weight: a hard constraint. Either way the grader's verdict stays the judge of correctness.
"""

from __future__ import annotations

from collections.abc import Sequence

from coding_framework.grading import ExecutionResult
from coding_framework.rewards.base import BaseRewardFunction, Item, RewardOutput, clip, register_reward
from coding_framework.rewards.style import lint

__all__ = ["HIGH_SEVERITY", "SecurityReward", "security_findings"]

# Bandit's high-severity checks, as ruff names them: exec, eval, pickle/marshal loads, shell injection,
# unsafe YAML, SQL by string, jinja2 autoescape off, weak hashes for security.
HIGH_SEVERITY = frozenset({
    "S102", "S301", "S302", "S307", "S324", "S506", "S602", "S604", "S605", "S608", "S701",
})
# An assert in a solution is ordinary code, not a vulnerability.
_IGNORED = "S101"


def security_findings(programs: Sequence[str]) -> list[list[str]]:
    """The flake8-bandit rule codes ruff reports for each program."""
    return [[f.get("code") or "" for f in found] for found in lint(programs, rules="S", ignore=_IGNORED)]


@register_reward("security")
class SecurityReward(BaseRewardFunction):
    """1.0 without findings, linearly down to -1.0 at ``security_max_issues``; -1.0 on a high-severity one."""

    needs_execution = False

    def score_batch(
        self, items: Sequence[Item], results: Sequence[ExecutionResult] | None = None
    ) -> list[RewardOutput]:
        outs = []
        most = self.config.security_max_issues
        for codes in security_findings([program for _, program in items]):
            high = sorted(set(codes) & HIGH_SEVERITY)
            value = -1.0 if high else 1.0 - 2.0 * min(len(codes), most) / most
            outs.append(RewardOutput(value=clip(value, self.config.clip), raw=float(len(codes)),
                                     details={"codes": codes, "high_severity": high}))
        return outs
