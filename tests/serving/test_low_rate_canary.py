"""Canaries at low pass rates (issue 46): a candidate that passes nothing is never promoted, whatever the
order its grades arrive in; probe pairs are compared pair by pair; an A/A at a low rate still promotes."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from coding_framework.config.rollout import RolloutPolicy
from coding_framework.serving.rollouts.manager import RolloutManager
from coding_framework.serving.rollouts.outcomes import Outcome, strata
from coding_framework.serving.rollouts.stats import Paired, Verdict, compare_strata, stratified_sequence
from coding_framework.testing.rollouts import RecordingHooks

CHAMP, CAND = "champ@0000", "cand@0000"
P, F, U = Outcome.PASSED, Outcome.FAILED, Outcome.UNPARSEABLE
# The embedded model on builtin probes, roughly: 1 pass, 5 fails and 54 unparseable answers in 60.
CHAMPION_CYCLE = [P, *[F] * 5, *[U] * 54]


def _policy(**overrides: object) -> RolloutPolicy:
    return RolloutPolicy.model_validate({"drain_s": 0, "steps": [50, 100], **overrides})


async def _replay(tmp_path, policy: RolloutPolicy, feed: Callable[[RolloutManager, int], None],  # type: ignore[no-untyped-def]
                  observations: int) -> dict[str, Any]:
    """A canary fed ``feed(manager, i)`` for i in range(observations), until it ends; its final status."""
    m = RolloutManager(CHAMP, policy, RecordingHooks(), tracking_uri=f"sqlite:///{tmp_path}/mlflow.db",
                       rng=random.Random(0))
    started = await m.start("cand", "canary", None)
    for i in range(observations):
        feed(m, i)
        if m.active is None:
            break
    final = m.status(started["id"])
    await m.aclose()
    return final


def _unpaired(m: RolloutManager, i: int) -> None:
    m.observe_grade(CHAMP, CHAMPION_CYCLE[i % 60], "probe")
    m.observe_grade(CAND, U, "probe")


async def test_a_candidate_that_passes_nothing_is_rolled_back_when_promotion_came_first(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The replay of issue 46's race: probe grades one at a time, champion then candidate. Before the
    relative margin and the guardrails' gate, the pass-rate test found 0 passes "non-inferior within 0.1"
    of the champion's 1.7% and promoted (about 110 grades each) before the unparseable guardrail's
    evidence was in (about 150)."""
    final = await _replay(tmp_path, _policy(), _unpaired, 400)
    assert final["status"] == "rolled_back", final["reason"]
    assert final["reason"].startswith("guardrail unparseable"), final["reason"]
    assert [d["action"] for d in final["decisions"]] == ["start", "rollback"]


@pytest.mark.parametrize("seed", range(5))
async def test_no_order_of_the_same_grades_promotes_it(tmp_path, seed: int) -> None:  # type: ignore[no-untyped-def]
    grades = [(CHAMP, CHAMPION_CYCLE[i % 60]) for i in range(600)] + [(CAND, U)] * 600
    random.Random(seed).shuffle(grades)
    final = await _replay(tmp_path, _policy(max_graded=600),
                          lambda m, i: m.observe_grade(*grades[i], "probe"), len(grades))
    assert final["status"] == "rolled_back", final["reason"]
    assert "advance" not in [d["action"] for d in final["decisions"]]


async def test_probe_pairs_roll_it_back_and_the_status_counts_each_failure_mode(tmp_path) -> None:  # type: ignore[no-untyped-def]
    def feed(m: RolloutManager, i: int) -> None:
        m.observe_probe_pair(CHAMP, CAND, (CHAMPION_CYCLE[i % 60], None if i == 3 else U))

    final = await _replay(tmp_path, _policy(), feed, 400)
    assert final["status"] == "rolled_back" and final["reason"].startswith("guardrail unparseable")
    cand = final["arms"][CAND]
    assert cand["probe_errors"] == 1 and cand["probe_unparseable"] == cand["probe_graded"]
    assert cand["probe_crashed"] == cand["probe_timed_out"] == cand["probe_passed"] == 0
    pairs = final["probe_pairs"]
    assert sum(pairs.values()) == cand["probe_graded"] and pairs["unparseable,unparseable"] > 0
    assert set(final["guardrails"]) == {"unparseable", "crashed", "timed_out"}
    assert final["guardrails"]["unparseable"]["verdict"] == "worse"


async def test_a_candidate_broken_where_probes_cannot_show_it_ends_inconclusive(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Every answer of the candidate fails its tests; the champion's pass 2%. Nothing tells them apart
    within the budget, so the rollout ends inconclusive and follows on_inconclusive; it never advances."""
    def feed(m: RolloutManager, i: int) -> None:
        m.observe_probe_pair(CHAMP, CAND, (P if i % 50 == 0 else F, F))

    final = await _replay(tmp_path, _policy(max_graded=300, on_inconclusive="rollback"), feed, 400)
    assert final["status"] == "inconclusive", final["reason"]
    assert [d["action"] for d in final["decisions"]] == ["start", "rollback"]


async def test_an_aa_at_a_low_pass_rate_is_promoted_on_probe_pairs(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Both arms give the same answer to each problem (greedy decoding of one model): 10% pass, the rest
    mostly unparseable. Paired, the A/A clears both margins and every guardrail, step by step."""
    cycle = [P, F, *[U] * 8]

    def feed(m: RolloutManager, i: int) -> None:
        m.observe_probe_pair(CHAMP, CAND, (cycle[i % 10], cycle[i % 10]))

    final = await _replay(tmp_path, _policy(max_graded=5000), feed, 5000)
    assert final["status"] == "promoted", final["reason"]
    assert [d["action"] for d in final["decisions"]] == ["start", "advance", "promote"]
    assert final["arms"][CAND]["probe_graded"] < 1000


def test_pairs_make_the_probe_stratum_paired() -> None:
    pairs = {(P, P): 10, (P, F): 2, (F, P): 1, (U, U): 87}
    passed = strata({}, {}, frozenset({P}), pairs)
    assert passed[1] == Paired(both=10, champion_only=2, candidate_only=1, neither=87)
    tested = strata({}, {}, frozenset(Outcome) - {U}, pairs)
    assert tested[1] == Paired(both=13, champion_only=0, candidate_only=0, neither=87)


def test_paired_differences_leave_out_the_problems_own_difficulty() -> None:
    """The same 10% of 400 problems pass on both arms: unpaired, the interval is about +-0.08; paired, it
    is several times narrower, and both are centred on 0."""
    unpaired = stratified_sequence([((40, 400), (40, 400))], 0.025, 0.1)
    paired = stratified_sequence([Paired(40, 0, 0, 360)], 0.025, 0.1)
    assert unpaired[0] == paired[0] == 0
    assert (paired[2] - paired[1]) * 5 < unpaired[2] - unpaired[1]
    # the contrast and its variance: 0.3 p_cand - ... with ratio 0.8, both pass -> 0.2 each
    estimate, variance = Paired(40, 0, 0, 360).contrast(0.8)
    assert estimate == pytest.approx(0.02)
    assert variance == pytest.approx((40.5 * 0.04 + 0.5 * 0.64 + 0.5) / 402 / 400)


def test_the_relative_margin_binds_at_low_pass_rates() -> None:
    """0 of 300 against the champion's 6 of 300 (2%): within an absolute 0.1 (the lower bound is about
    -0.06), but never within 20% of the champion's rate."""
    absolute = compare_strata([((6, 300), (0, 300))], alpha=0.025, tau=0.1, margin=0.1)
    assert absolute.verdict is Verdict.NON_INFERIOR
    both = compare_strata([((6, 300), (0, 300))], alpha=0.025, tau=0.1, margin=0.1, relative_margin=0.2)
    assert both.verdict is Verdict.CONTINUE and both.relative_lower is not None and both.relative_lower < 0
    # an equal candidate with enough grades is within both (at 60% the absolute margin is the tighter)
    equal = compare_strata([((1800, 3000), (1800, 3000))], alpha=0.025, tau=0.1, margin=0.1,
                           relative_margin=0.2)
    assert equal.verdict is Verdict.NON_INFERIOR


async def test_immediate_without_a_baseline_never_promotes_a_candidate_that_passes_nothing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The champion has no graded history, so nothing can be compared: min_graded answers are not enough
    when none of them passes; the first pass promotes."""
    m = RolloutManager(CHAMP, _policy(min_graded=10), RecordingHooks(),
                       tracking_uri=f"sqlite:///{tmp_path}/mlflow.db", rng=random.Random(0))
    started = await m.start("cand", "immediate", None)
    for _ in range(50):
        m.observe_grade(CAND, U)
    assert m.status(started["id"])["status"] == "running"
    m.observe_grade(CAND, P)
    final = m.status(started["id"])
    await m.aclose()
    assert final["status"] == "promoted" and "passed 1" in final["reason"], final["reason"]
