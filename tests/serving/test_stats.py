"""The rollout statistics: always-valid under continuous peeking (A/A), powerful against real drops."""

from __future__ import annotations

import numpy as np
import pytest

from coding_framework.serving.rollouts.stats import (
    SequentialSRM,
    Verdict,
    compare,
    confidence_sequence,
    power,
    samples_to_verdict,
    srm_log_evidence,
)

ALPHA, TAU, MARGIN = 0.05, 0.1, 0.1


def _ever_rejects(rng: np.random.Generator, p: float, share: float, n: int) -> bool:
    """One A/A experiment, the interval checked after every observation through the public function."""
    s, t = [0, 0], [0, 0]
    for arm, y in zip(rng.random(n) < share, rng.random(n) < p, strict=True):
        s[int(arm)] += int(y)
        t[int(arm)] += 1
        _, lower, upper = confidence_sequence((s[0], t[0]), (s[1], t[1]), ALPHA, TAU)
        if lower > 0 or upper < 0:
            return True
    return False


@pytest.mark.parametrize(("p", "share"), [(0.5, 0.5), (0.2, 0.1)])
def test_aa_false_positive_rate_stays_below_alpha_with_a_peek_after_every_observation(
    p: float, share: float
) -> None:
    rng = np.random.default_rng(13)
    rate = np.mean([_ever_rejects(rng, p, share, 300) for _ in range(200)])
    # 200 experiments: the binomial sd at 5% is 1.5%, so 5% + 2 sd still flags an invalid test.
    assert rate <= ALPHA + 0.03


def test_naive_peeking_z_test_would_fail_the_same_aa_check() -> None:
    """The contrast the sequential test exists for: a fixed-n z-test looked at every observation."""
    rng = np.random.default_rng(13)
    hits = 0
    for _ in range(200):
        arm, y = rng.random(300) < 0.5, rng.random(300) < 0.5
        n1, n0 = np.cumsum(arm), np.cumsum(~arm)
        s1, s0 = np.cumsum(arm & y), np.cumsum(~arm & y)
        ok = (n1 > 1) & (n0 > 1)
        pooled = (s0 + s1) / np.arange(1, 301)
        with np.errstate(all="ignore"):
            z = (s1 / n1 - s0 / n0) / np.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n0))
        hits += bool(np.any(ok & (np.abs(z) > 1.96)))
    assert hits / 200 > 0.2


def test_verdicts() -> None:
    assert compare((60, 100), (30, 100), alpha=ALPHA, tau=TAU, margin=MARGIN).verdict is Verdict.WORSE
    assert compare((600, 1000), (600, 1000), alpha=ALPHA, tau=TAU, margin=MARGIN).verdict is \
        Verdict.NON_INFERIOR
    assert compare((6, 10), (6, 10), alpha=ALPHA, tau=TAU, margin=MARGIN).verdict is Verdict.CONTINUE
    assert confidence_sequence((0, 0), (3, 5), ALPHA, TAU)[1:] == (-1.0, 1.0)


def test_a_broken_candidate_is_caught_within_a_few_dozen_grades() -> None:
    champion, candidate = (0, 0), (0, 0)
    rng = np.random.default_rng(1)
    for _ in range(1000):
        if rng.random() < 0.1:
            candidate = (0, candidate[1] + 1)
        else:
            champion = (champion[0] + int(rng.random() < 0.6), champion[1] + 1)
        if compare(champion, candidate, alpha=ALPHA, tau=TAU, margin=MARGIN).verdict is Verdict.WORSE:
            break
    assert candidate[1] <= 40, candidate


def test_power_matches_simulation_roughly() -> None:
    n = samples_to_verdict(0.6, 0.3, share=0.5, alpha=ALPHA, tau=TAU)
    assert power(0.6, 0.3, n, share=0.5, alpha=ALPHA, tau=TAU) == pytest.approx(0.5, abs=0.01)
    assert samples_to_verdict(0.6, 0.3, share=0.5, alpha=ALPHA, tau=TAU, target=0.8) > n
    rng = np.random.default_rng(5)
    caught = 0
    for _ in range(300):
        arm = rng.random(2 * n) < 0.5
        y = rng.random(2 * n) < np.where(arm, 0.3, 0.6)
        s, t = [0, 0], [0, 0]
        for a, v in zip(arm, y, strict=True):
            s[int(a)] += int(v)
            t[int(a)] += 1
            if t[1] >= n:
                break
        caught += compare((s[0], t[0]), (s[1], t[1]), alpha=ALPHA, tau=TAU, margin=MARGIN).verdict \
            is Verdict.WORSE
    assert caught / 300 == pytest.approx(0.5, abs=0.15)


def test_samples_to_verdict_rejects_impossible_targets() -> None:
    with pytest.raises(ValueError, match="no verdict"):
        samples_to_verdict(0.5, 0.6, share=0.5, alpha=ALPHA, tau=TAU)


def test_srm_evidence_grows_only_under_a_mismatch() -> None:
    rng = np.random.default_rng(3)
    fair = np.bincount(rng.random(5000) < 0.1, minlength=2).tolist()
    assert srm_log_evidence(fair, [0.9, 0.1], 100) < np.log(1 / 0.001)
    skewed = np.bincount(rng.random(5000) < 0.13, minlength=2).tolist()
    assert srm_log_evidence(skewed, [0.9, 0.1], 100) > np.log(1 / 0.001)
    assert srm_log_evidence([1, 4], [0.0, 1.0], 100) == np.inf


def test_srm_aa_false_positive_rate_under_continuous_monitoring() -> None:
    rng = np.random.default_rng(8)
    alarms = 0
    for _ in range(100):
        arms = (rng.random(500) < 0.5).astype(int)
        counts = [0, 0]
        for a in arms.tolist():
            counts[a] += 1
            if srm_log_evidence(counts, [0.5, 0.5], 100) >= np.log(1 / 0.05):
                alarms += 1
                break
    assert alarms / 100 <= 0.05 + 0.05


def test_sequential_srm_equals_the_batch_bayes_factor_and_keeps_evidence_across_weights() -> None:
    rng = np.random.default_rng(2)
    srm = SequentialSRM([90, 10], alpha=0.001, concentration=100)
    arms = (rng.random(400) < 0.1).astype(int).tolist()
    for a in arms:
        srm.add(a)
    batch = srm_log_evidence([arms.count(0), arms.count(1)], [0.9, 0.1], 100)
    assert srm.log_evidence == pytest.approx(batch)
    before = srm.log_evidence
    srm.reweigh([50, 50])
    assert srm.add(1) is False and srm.add(1) is False
    assert srm.counts == [0, 2]
    assert srm.log_evidence == pytest.approx(before + srm_log_evidence([0, 2], [0.5, 0.5], 100))
    assert SequentialSRM([0, 100], alpha=0.001, concentration=100).add(0) is True
