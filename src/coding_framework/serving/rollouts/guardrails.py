"""The guardrails: checks that roll a rollout back on their own, without waiting for the pass rate.

``GUARDRAILS`` is the list. Each `Guardrail` has a ``name``, the observations that can trip it
(``watches``: ``grades``, after each graded answer; ``errors``, after each failed candidate request) and a
``check`` that reads both arms (`Arms`) and returns a `Finding`: the reason to roll back (None: carry on)
and, for a guardrail on graded answers, the test that must show the candidate non-inferior before a step
may advance (a guardrail without one never holds a step back).
The manager runs every guardrail that watches an observation, in list order, and rolls back on the first
reason.

- ``unparseable``, ``crashed``, ``timed_out``: the rate of that failure mode, compared with the same
  always-valid test as the pass rate (`rollouts.stats.compare_strata`, stratified by grade source, probes
  paired), trips as soon as it is significantly higher on the candidate. Their tests also gate promotion:
  a step advances only when each of them, like the pass rate, shows the candidate non-inferior (within
  ``margin`` and ``relative_margin`` on the rate of answers without that outcome). So a candidate whose
  failures are not yet significant but not yet ruled out waits, whatever order the grades arrive in.
- ``errors`` (the error burst): ``error_burst`` of the last ``error_window`` candidate requests failed AND
  the candidate's error rate is significantly above the champion's (no grades needed).

The error budget ``alpha`` (the chance that an A/A rollout is ever rolled back) is split Bonferroni-style
over every test that can roll back: ``pass_share`` of it to the pass-rate drop, the rest evenly over the
guardrails (`error_budget`), so a new guardrail takes its share by being in the list.
``benchmarks/serving/stats.py`` checks the A/A rate with all of them on, peeking after every observation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from coding_framework.config.rollout import RolloutPolicy
from coding_framework.serving.rollouts.arms import Arm
from coding_framework.serving.rollouts.outcomes import Outcome, Pairs, strata
from coding_framework.serving.rollouts.stats import Comparison, Verdict, compare_strata, confidence_sequence

__all__ = ["GUARDRAILS", "PASS_RATE", "Arms", "Finding", "Guardrail", "Watch", "error_budget", "outcome_rate",
           "run_guardrails"]

Watch = Literal["grades", "errors"]
PASS_RATE = "pass_rate"  # the pass-rate test's share of the error budget (it gates advancing too)


@dataclass(frozen=True)
class Arms:
    """What a check reads: both arms of the rollout, the guardrail's share of ``alpha``, and the policy."""

    champion: Arm
    candidate: Arm
    alpha: float
    policy: RolloutPolicy
    pairs: Pairs | None = None


@dataclass(frozen=True)
class Finding:
    """A guardrail's look: the reason to roll back (None: carry on) and, for a grade guardrail, its test."""

    reason: str | None
    test: Comparison | None = None


@dataclass(frozen=True)
class Guardrail:
    name: str
    watches: Watch
    check: Callable[[Arms], Finding]


def outcome_rate(outcome: Outcome) -> Guardrail:
    """Trips when the candidate's rate of ``outcome`` is significantly higher than the champion's.

    It is tested as the rate of answers WITHOUT that outcome (higher is better), so a WORSE verdict is a
    significantly higher rate of it, and NON_INFERIOR (the policy's margins) clears it for promotion.
    """
    good = frozenset(Outcome) - {outcome}

    def check(arms: Arms) -> Finding:
        champ, cand, p = arms.champion, arms.candidate, arms.policy
        test = compare_strata(strata(champ.outcomes, cand.outcomes, good, arms.pairs), alpha=arms.alpha,
                              tau=p.mixture_tau, margin=p.margin, relative_margin=p.relative_margin)
        if test.verdict is not Verdict.WORSE:
            return Finding(None, test)
        reason = (f"guardrail {outcome.value}: {cand.rates(outcome)} {outcome.value} vs the champion's "
                  f"{champ.rates(outcome)}; always-valid {1 - arms.alpha:.2%} interval of the difference in "
                  f"answers without it [{test.lower:.3f}, {test.upper:.3f}]")
        return Finding(reason, test)

    return Guardrail(outcome.value, "grades", check)


def _error_burst(arms: Arms) -> Finding:
    return Finding(_burst_reason(arms))


def _burst_reason(arms: Arms) -> str | None:
    champ, cand = arms.champion, arms.candidate
    burst = cand.recent_errors
    if burst < arms.policy.error_burst:
        return None
    _, lower, upper = confidence_sequence(
        (champ.errors, champ.requests), (cand.errors, cand.requests), arms.alpha, arms.policy.mixture_tau)
    if champ.requests and lower <= 0:
        return None
    baseline = (f"the champion's error rate is {champ.errors}/{champ.requests} (always-valid interval of "
                f"the difference [{lower:.3f}, {upper:.3f}])" if champ.requests else
                "the champion has no requests to compare with")
    return (f"error burst: {burst} of the last {cand.window} candidate requests failed "
            f"({cand.errors}/{cand.requests} in all); {baseline}")


GUARDRAILS: tuple[Guardrail, ...] = (
    outcome_rate(Outcome.UNPARSEABLE),
    outcome_rate(Outcome.CRASHED),
    outcome_rate(Outcome.TIMED_OUT),
    Guardrail("errors", "errors", _error_burst),
)


def error_budget(alpha: float, pass_share: float) -> dict[str, float]:
    """Each rollback test's alpha (``pass_rate`` and every guardrail's name); they sum to ``alpha``, so by
    the union bound an A/A is rolled back with chance at most ``alpha`` (the SRM check has its own
    ``srm_alpha``)."""
    rest = alpha * (1 - pass_share) / len(GUARDRAILS)
    return {PASS_RATE: alpha * pass_share} | {g.name: rest for g in GUARDRAILS}


def run_guardrails(watch: Watch, champion: Arm, candidate: Arm, alphas: Mapping[str, float],
                   policy: RolloutPolicy, pairs: Pairs | None = None) -> dict[str, Finding]:
    """The findings of every guardrail watching ``watch``, in list order (the first with a reason rolls
    back)."""
    return {g.name: g.check(Arms(champion, candidate, alphas[g.name], policy, pairs))
            for g in GUARDRAILS if g.watches == watch}
