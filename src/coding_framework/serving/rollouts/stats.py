"""Always-valid statistics for rollouts: pure functions, safe to evaluate after every observation.

- ``compare``: the mixture sequential probability ratio test (mSPRT) of Johari, Pekelis & Walsh,
  "Always Valid Inference: Continuous Monitoring of A/B Tests" (Operations Research 2022; arXiv 1512.04922),
  on the difference of two proportions (candidate minus champion), inverted into a confidence sequence.
  With the difference estimate ``d`` and its variance ``v`` (``p(1-p)/n`` per arm) and a normal mixture
  ``N(0, tau^2)`` over the true difference, the mixture likelihood ratio against ``theta0`` is

      Lambda = sqrt(v / (v + tau^2)) * exp(tau^2 (d - theta0)^2 / (2 v (v + tau^2)))

  and ``{theta0 : Lambda < 1/alpha}`` is the interval ``d +- sqrt(v (v + tau^2) / tau^2 *
  (2 log(1/alpha) + log((v + tau^2) / v)))``: it covers the true difference at all times at once with
  probability >= 1 - alpha (asymptotically; ``benchmarks/serving/stats.py`` checks it by A/A simulation).
  ``v`` is the larger of the unpooled variance (right under a difference) and the pooled one (right under
  no difference), each with rates shrunk as ``(s + 1) / (n + 2)``: the unpooled variance alone makes a
  small arm at 0/n look far too certain, and the A/A false-positive rate then exceeds alpha.
- Paired strata (`Paired`): probes send the same problem to both arms, so their outcomes come in pairs; the
  difference is then the mean of per-pair differences, whose variance leaves out the problems' own
  difficulty (most pairs agree). Its variance is the smoothed second moment of the per-pair contrast (add
  1/2 to each cell of the 2x2 table): under no difference that is McNemar's, and it never shrinks to 0.
- Non-inferiority is shown on two contrasts: the difference (above ``-margin``) and, with a
  ``relative_margin`` m, ``p_candidate - (1 - m) p_champion`` (above 0: the candidate keeps at least
  ``1 - m`` of the champion's rate). At a champion pass rate of 5% an absolute margin of 0.1 would pass a
  candidate that passes nothing; the relative one binds wherever ``m * p_champion < margin``.
- ``srm_log_evidence``: a sequential sample-ratio-mismatch test, the Dirichlet-multinomial Bayes factor of
  Lindon & Malek, "Anytime-Valid Inference for Multinomial Count Data" (NeurIPS 2022). It is a test
  martingale under the assigned weights, so ``log_evidence >= log(1/alpha)`` has type-I error <= alpha
  however often it is checked.
- ``power`` and ``samples_to_verdict``: how many graded candidate requests the test needs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from scipy import optimize, stats

__all__ = [
    "Comparison",
    "Paired",
    "SequentialSRM",
    "Stratum",
    "Verdict",
    "compare",
    "compare_strata",
    "confidence_sequence",
    "power",
    "samples_to_verdict",
    "srm_log_evidence",
    "stratified_sequence",
]


class Verdict(StrEnum):
    WORSE = "worse"  # the candidate's rate is significantly below the champion's: roll back
    NON_INFERIOR = "non_inferior"  # at worst `margin` below the champion's: a step may advance
    CONTINUE = "continue"  # not enough evidence either way: keep collecting


@dataclass(frozen=True)
class Comparison:
    """Candidate minus champion rate, its always-valid interval, and the verdict it implies.

    ``relative_lower``: the lower bound of ``p_candidate - (1 - relative_margin) p_champion`` (None when no
    relative margin was asked for); non-inferiority needs it above 0.
    """

    estimate: float
    lower: float
    upper: float
    verdict: Verdict
    relative_lower: float | None = None

    def as_dict(self) -> dict[str, float | str | None]:
        return {
            "estimate": self.estimate,
            "lower": self.lower,
            "upper": self.upper,
            "verdict": self.verdict.value,
            "relative_lower": self.relative_lower,
        }


@dataclass(frozen=True)
class Paired:
    """A stratum of paired binary outcomes (the same items answered by both arms): how many pairs were
    good on both, on the champion's side only, on the candidate's only, and on neither."""

    both: int
    champion_only: int
    candidate_only: int
    neither: int

    @property
    def pairs(self) -> int:
        return self.both + self.champion_only + self.candidate_only + self.neither

    def contrast(self, ratio: float) -> tuple[float, float]:
        """``p_candidate - ratio * p_champion`` and its variance: the smoothed second moment of the
        per-pair contrast over the number of pairs."""
        n = self.pairs
        cells = ((self.both, 1 - ratio), (self.champion_only, -ratio), (self.candidate_only, 1.0),
                 (self.neither, 0.0))
        estimate = sum(k * c for k, c in cells) / n
        second = sum((k + 0.5) * c * c for k, c in cells) / (n + 2)
        return estimate, second / n


# A stratum: unpaired ((champion successes, trials), (candidate successes, trials)), or `Paired`.
Stratum = tuple[tuple[int, int], tuple[int, int]] | Paired


def _shrunk_variance(successes: int, trials: int) -> float:
    rate = (successes + 1) / (trials + 2)
    return rate * (1 - rate) / trials


def confidence_sequence(
    champion: tuple[int, int], candidate: tuple[int, int], alpha: float, tau: float
) -> tuple[float, float, float]:
    """(estimate, lower, upper) of candidate minus champion rate; each arm is (successes, trials).

    An arm without trials leaves the difference unknown: the interval is then [-1, 1].
    """
    return stratified_sequence([(champion, candidate)], alpha, tau)


def _difference(champion: tuple[int, int], candidate: tuple[int, int], ratio: float) -> tuple[float, float]:
    """``p_candidate - ratio * p_champion`` and its variance (the larger of the unpooled and pooled one, see
    above)."""
    (s_a, n_a), (s_b, n_b) = champion, candidate
    pooled = (s_a + s_b + 1) / (n_a + n_b + 2)
    unpooled = _shrunk_variance(s_b, n_b) + ratio * ratio * _shrunk_variance(s_a, n_a)
    null = pooled * (1 - pooled) * (1 / n_b + ratio * ratio / n_a)
    return s_b / n_b - ratio * s_a / n_a, max(unpooled, null)


def _contrast(stratum: Stratum, ratio: float) -> tuple[float, float] | None:
    """The stratum's contrast and variance; None when it holds no comparison (an arm without trials)."""
    if isinstance(stratum, Paired):
        return stratum.contrast(ratio) if stratum.pairs else None
    champion, candidate = stratum
    return _difference(champion, candidate, ratio) if champion[1] and candidate[1] else None


def _raw_rate(strata: Sequence[Stratum], arm: int) -> float:
    good = trials = 0
    for stratum in strata:
        if isinstance(stratum, Paired):
            good += stratum.both + (stratum.candidate_only if arm else stratum.champion_only)
            trials += stratum.pairs
        else:
            good, trials = good + stratum[arm][0], trials + stratum[arm][1]
    return good / trials if trials else 0.0


def stratified_sequence(
    strata: Sequence[Stratum], alpha: float, tau: float, ratio: float = 1.0
) -> tuple[float, float, float]:
    """`confidence_sequence` over strata (unpaired (champion, candidate) (successes, trials), or `Paired`),
    of ``p_candidate - ratio * p_champion``.

    The per-stratum contrasts are combined with inverse-variance weights (``d = sum(d_s / v_s) /
    sum(1 / v_s)``, ``v = 1 / sum(1 / v_s)``), so arms that see the strata in different proportions (a
    canary's client traffic is 90/10, its probes 50/50) are compared stratum by stratum and an A/A stays
    an A/A even when the strata's rates differ. One unpaired stratum is exactly `confidence_sequence`.
    Strata without a comparison carry no information; with none left the interval is [-1, 1].
    """
    weight = weighted = 0.0
    for stratum in strata:
        found = _contrast(stratum, ratio)
        if found is not None:
            d, v = found
            weight += 1 / v
            weighted += d / v
    if weight == 0:
        return _raw_rate(strata, 1) - ratio * _raw_rate(strata, 0), -1.0, 1.0
    estimate, v = weighted / weight, 1 / weight
    half = _half_width(v, alpha, tau)
    return estimate, max(-1.0, estimate - half), min(1.0, estimate + half)


def _half_width(v: float, alpha: float, tau: float) -> float:
    t2 = tau * tau
    return math.sqrt(v * (v + t2) / t2 * (2 * math.log(1 / alpha) + math.log((v + t2) / v)))


def compare(
    champion: tuple[int, int], candidate: tuple[int, int], *, alpha: float, tau: float, margin: float
) -> Comparison:
    """The sequential verdict on candidate vs champion rates (each arm: successes, trials).

    WORSE when the whole interval is below 0; NON_INFERIOR when it is above ``-margin``; else CONTINUE.
    """
    return compare_strata([(champion, candidate)], alpha=alpha, tau=tau, margin=margin)


def compare_strata(
    strata: Sequence[Stratum], *, alpha: float, tau: float, margin: float,
    relative_margin: float | None = None,
) -> Comparison:
    """`compare` on `stratified_sequence`. With ``relative_margin`` m, NON_INFERIOR also needs the lower
    bound of ``p_candidate - (1 - m) p_champion`` above 0 (a test at the same ``alpha``: requiring both
    bounds is an intersection-union test, so the chance of a wrong NON_INFERIOR stays at most ``alpha``)."""
    estimate, lower, upper = stratified_sequence(strata, alpha, tau)
    relative = (None if relative_margin is None
                else stratified_sequence(strata, alpha, tau, 1 - relative_margin)[1])
    if upper < 0:
        verdict = Verdict.WORSE
    elif lower > -margin and (relative is None or relative > 0):
        verdict = Verdict.NON_INFERIOR
    else:
        verdict = Verdict.CONTINUE
    return Comparison(estimate, lower, upper, verdict, relative)


def srm_log_evidence(counts: Sequence[int], weights: Sequence[float], concentration: float) -> float:
    """Log Bayes factor against "assignments follow ``weights``" (Lindon & Malek 2022, eq. 6).

    ``counts[i]`` units were assigned to arm i whose share is ``weights[i]`` (normalized here). The
    alternative mixes over Dirichlet(``concentration * weights``). A unit in an arm of weight 0 is
    infinite evidence.
    """
    total = sum(weights)
    if any(x > 0 and w == 0 for x, w in zip(counts, weights, strict=True)):
        return math.inf
    # math.lgamma on scalars: this runs on the request path, where numpy/scipy call overhead dominates.
    pairs = [(x, w / total) for x, w in zip(counts, weights, strict=True) if w > 0]
    a_sum, n = concentration, sum(x for x, _ in pairs)
    log_marginal = math.lgamma(a_sum) - math.lgamma(a_sum + n) + sum(
        math.lgamma(concentration * p + x) - math.lgamma(concentration * p) for x, p in pairs)
    return log_marginal - sum(x * math.log(p) for x, p in pairs)


class SequentialSRM:
    """`srm_log_evidence` updated one unit at a time in O(1), for the request path.

    Each unit multiplies the Bayes factor by its Dirichlet-multinomial predictive probability over its
    assigned weight. ``reweigh`` starts a new factor for new weights and keeps the evidence so far: a
    product of test martingales, each started at a stopping time, is still one.
    """

    def __init__(self, weights: Sequence[float], alpha: float, concentration: float) -> None:
        self.threshold = math.log(1 / alpha)
        self.concentration = concentration
        self.log_evidence = 0.0
        self.reweigh(weights)

    def reweigh(self, weights: Sequence[float]) -> None:
        total = sum(weights)
        self.weights = [w / total for w in weights]
        self.counts = [0] * len(weights)

    def add(self, arm: int) -> bool:
        """Count one unit assigned to ``arm``; True once the split is a significant mismatch."""
        p = self.weights[arm]
        if p == 0:
            self.log_evidence = math.inf
        else:
            predictive = (self.concentration * p + self.counts[arm]) / (self.concentration + sum(self.counts))
            self.log_evidence += math.log(predictive / p)
        self.counts[arm] += 1
        return self.log_evidence >= self.threshold


def _variance_at(n: float, p_champion: float, p_candidate: float, share: float) -> float:
    """Variance of the difference after ``n`` candidate grades (the champion has (1-share)/share as many),
    as `confidence_sequence` computes it."""
    n_champion = n * (1 - share) / share
    unpooled = p_champion * (1 - p_champion) / n_champion + p_candidate * (1 - p_candidate) / n
    pooled = (n_champion * p_champion + n * p_candidate) / (n_champion + n)
    return max(unpooled, pooled * (1 - pooled) * (1 / n_champion + 1 / n))


def _gap(p_champion: float, p_candidate: float, margin: float | None) -> float:
    """Distance the interval's half-width must shrink below: to exclude 0 (margin None) or -margin."""
    delta = p_candidate - p_champion
    return -delta if margin is None else delta + margin


def power(
    p_champion: float,
    p_candidate: float,
    n: float,
    *,
    share: float,
    alpha: float,
    tau: float,
    margin: float | None = None,
) -> float:
    """Chance the verdict is reached by ``n`` graded candidate requests (normal approximation at ``n``).

    ``margin`` None: the verdict WORSE (needs ``p_candidate < p_champion``); else NON_INFERIOR within
    ``margin``. ``share`` is the candidate's share of graded requests. The chance of being past the
    boundary at ``n`` is a lower bound on having crossed it at some earlier look.
    """
    gap = _gap(p_champion, p_candidate, margin)
    v = _variance_at(n, p_champion, p_candidate, share)
    return float(stats.norm.cdf((gap - _half_width(v, alpha, tau)) / math.sqrt(v)))


def samples_to_verdict(
    p_champion: float,
    p_candidate: float,
    *,
    share: float,
    alpha: float,
    tau: float,
    margin: float | None = None,
    target: float = 0.5,
) -> int:
    """Graded candidate requests after which the verdict is reached with chance ``target`` (see `power`).

    ``target`` 0.5 gives the typical (median) sample size; 0.8 the size for 80% power.
    """
    if _gap(p_champion, p_candidate, margin) <= 0:
        raise ValueError(
            "no verdict to reach: WORSE needs p_candidate < p_champion, NON_INFERIOR needs "
            "p_candidate > p_champion - margin"
        )

    def shortfall(log_n: float) -> float:
        return (
            power(p_champion, p_candidate, math.exp(log_n), share=share, alpha=alpha, tau=tau, margin=margin)
            - target
        )

    if shortfall(0.0) >= 0:
        return 1
    return math.ceil(math.exp(optimize.brentq(shortfall, 0.0, math.log(1e12))))
