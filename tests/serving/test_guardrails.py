"""Guardrails, budgets, abort and the state round trip on the real RolloutManager under simulated traffic;
the stratified test keeps an A/A an A/A when client and probe grades differ in rate and split."""

from __future__ import annotations

import random
import time

import numpy as np
import pytest

from coding_framework.config.rollout import RolloutPolicy
from coding_framework.serving.rollouts import guardrails
from coding_framework.serving.rollouts.api import Budget
from coding_framework.serving.rollouts.guardrails import Arms, Finding, Guardrail, error_budget
from coding_framework.serving.rollouts.manager import RolloutFinished, RolloutManager
from coding_framework.serving.rollouts.outcomes import Outcome, classify
from coding_framework.serving.rollouts.stats import stratified_sequence
from coding_framework.testing.rollouts import RecordingHooks, Traffic

CHAMP, CAND = "champ@0000", "cand@0000"
POLICY = RolloutPolicy(margin=0.3, min_graded=20, drain_s=0, steps=[10, 50, 100])


@pytest.fixture
async def manager(tmp_path):  # type: ignore[no-untyped-def]
    m = RolloutManager(CHAMP, POLICY, RecordingHooks(), tracking_uri=f"sqlite:///{tmp_path}/mlflow.db",
                       rng=random.Random(0))
    yield m
    await m.aclose()


def test_classify_reads_the_graders_status_and_parses_the_program() -> None:
    assert classify("def f():\n    return 1\n", "passed") is Outcome.PASSED
    assert classify("", "error") is Outcome.UNPARSEABLE
    assert classify("def f(:\n", "error") is Outcome.UNPARSEABLE
    assert classify("def f():\n    raise KeyError\n", "error") is Outcome.CRASHED
    assert classify("def f():\n    pass\n", "crashed") is Outcome.CRASHED
    assert classify("def f():\n    while True: pass\n", "timeout") is Outcome.TIMED_OUT
    assert classify("def f():\n    return 2\n", "failed") is Outcome.FAILED


def test_the_error_budget_sums_to_alpha() -> None:
    budget = error_budget(0.05, 0.5)
    assert set(budget) == {"pass_rate", "unparseable", "crashed", "timed_out", "errors"}
    assert sum(budget.values()) == pytest.approx(0.05) and budget["pass_rate"] == pytest.approx(0.025)


def test_strata_keep_an_aa_with_different_mixes_an_aa() -> None:
    """Client answers pass 60%, probes 5%; the champion sees 90% client, the candidate 10%. Pooled, the
    candidate looks far worse; stratified, the A/A interval covers 0."""
    rng = np.random.default_rng(0)
    champ = ((int(rng.binomial(900, 0.6)), 900), (int(rng.binomial(100, 0.05)), 100))
    cand = ((int(rng.binomial(100, 0.6)), 100), (int(rng.binomial(100, 0.05)), 100))
    _, lower, upper = stratified_sequence([(champ[0], cand[0]), (champ[1], cand[1])], 0.05, 0.1)
    assert lower < 0 < upper
    pooled = ((champ[0][0] + champ[1][0], 1000), (cand[0][0] + cand[1][0], 200))
    _, _, pooled_upper = stratified_sequence([pooled], 0.05, 0.1)
    assert pooled_upper < 0  # what mixing the sources would have concluded


async def test_unparseable_answers_roll_back_before_the_pass_rate_can(manager) -> None:  # type: ignore[no-untyped-def]
    started = await manager.start("cand", "canary", [50, 100])
    rng = random.Random(1)
    for i in range(400):
        version = manager.route(f"s{i}").version
        if version == CHAMP:
            outcome = Outcome.PASSED if rng.random() < 0.05 else rng.choice([Outcome.FAILED] * 4 + [
                Outcome.UNPARSEABLE])
        else:
            outcome = Outcome.UNPARSEABLE
        manager.observe_grade(version, outcome)
        if manager.status(started["id"])["status"] != "running":
            break
    final = manager.status(started["id"])
    assert final["status"] == "rolled_back" and final["reason"].startswith("guardrail unparseable"), final
    assert final["arms"][CAND]["graded"] < 40


async def test_probe_grades_are_counted_apart_and_feed_the_test(manager) -> None:  # type: ignore[no-untyped-def]
    started = await manager.start("cand", "canary", [10, 100])
    for _ in range(60):
        manager.observe_grade(CHAMP, Outcome.PASSED, "probe")
        manager.observe_grade(CAND, Outcome.FAILED, "probe")
        if manager.status(started["id"])["status"] != "running":
            break
    final = manager.status(started["id"])
    assert final["status"] == "rolled_back" and "pass-rate" in final["reason"]
    cand = final["arms"][CAND]
    assert cand["graded"] == 0 and cand["probe_graded"] > 0 and cand["probe_pass_rate"] == 0.0
    assert final["srm"]["log_evidence"] == 0.0  # probes never touch assignment


async def test_a_spent_budget_ends_inconclusive_and_rolls_back(manager) -> None:  # type: ignore[no-untyped-def]
    started = await manager.start("cand", "canary", None, budget=Budget(None, 30, "rollback"))
    final = Traffic(manager, {CHAMP: 0.5, CAND: 0.5}).run_until_done(started["id"], 5000)
    assert final["status"] == "inconclusive" and final["weights"][CAND] == 0, final["reason"]
    assert final["budget"]["graded"] == 30 and "rolled back" in final["reason"]
    assert {manager.route(f"new-{i}").version for i in range(50)} == {CHAMP}


async def test_a_held_budget_keeps_the_split_until_aborted(manager) -> None:  # type: ignore[no-untyped-def]
    started = await manager.start("cand", "canary", [50, 100], budget=Budget(0.05, None, "hold"))
    time.sleep(0.06)
    manager.tick()
    held = manager.status(started["id"])
    assert held["status"] == "inconclusive" and held["held"] and held["weights"][CAND] == 50
    aborted = manager.abort(started["id"])
    assert aborted["status"] == "aborted" and aborted["weights"][CAND] == 0
    with pytest.raises(RolloutFinished):
        manager.abort(started["id"])
    with pytest.raises(KeyError):
        manager.abort("ro-nope")


async def test_state_round_trip_resumes_the_rollout_and_its_sessions(manager, tmp_path) -> None:  # type: ignore[no-untyped-def]
    started = await manager.start("cand", "canary", [50, 100])
    traffic = Traffic(manager, {CHAMP: 0.5, CAND: 0.5})
    pinned = {f"s{i}": traffic.request(f"s{i}").version for i in range(30)}
    manager.observe_probe_pair(CHAMP, CAND, (Outcome.PASSED, Outcome.UNPARSEABLE))
    manager.observe_probe_pair(CHAMP, CAND, (Outcome.FAILED, None))
    records, pins = manager.export_state()
    restored = RolloutManager(CHAMP, POLICY, RecordingHooks(), tracking_uri=f"sqlite:///{tmp_path}/m2.db")
    restored.restore(records, started["id"], pins[1])
    before, after = manager.status(started["id"]), restored.status(started["id"])
    assert after["arms"][CAND]["graded"] == before["arms"][CAND]["graded"] > 0
    assert after["weights"] == before["weights"] and after["srm"] == before["srm"]
    assert after["probe_pairs"] == before["probe_pairs"] == {"passed,unparseable": 1}
    assert after["arms"][CAND]["probe_errors"] == 1 and after["arms"][CAND]["probe_unparseable"] == 1
    assert {s: restored.route(s).version for s in pinned} == pinned
    assert after["decisions"][-1]["action"] == "resume"
    await restored.aclose()


async def test_a_new_guardrail_is_one_entry_of_the_list(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def token_blowup(arms: Arms) -> Finding:
        champ, cand = arms.champion, arms.candidate
        if min(champ.requests, cand.requests) < 20:
            return Finding(None)
        ratio = (cand.tokens / cand.requests) / max(champ.tokens / champ.requests, 1.0)
        reason = f"token blow-up: {ratio:.1f}x the champion's tokens per request"
        return Finding(reason if ratio > 3 else None)

    monkeypatch.setattr(guardrails, "GUARDRAILS",
                        (*guardrails.GUARDRAILS, Guardrail("tokens", "grades", token_blowup)))
    budget = error_budget(0.05, 0.5)
    assert set(budget) == {"pass_rate", "unparseable", "crashed", "timed_out", "errors", "tokens"}
    assert sum(budget.values()) == pytest.approx(0.05)
    m = RolloutManager(CHAMP, POLICY, RecordingHooks(), tracking_uri=f"sqlite:///{tmp_path}/mlflow.db",
                       rng=random.Random(0))
    started = await m.start("cand", "canary", [50, 100])
    for _ in range(20):
        for version, tokens in ((CHAMP, 20), (CAND, 200)):
            m.observe(version, latency_s=0.01, error=False, tokens=tokens)
            m.observe_grade(version, Outcome.PASSED)
    final = m.status(started["id"])
    await m.aclose()
    assert final["status"] == "rolled_back", final["reason"]
    assert final["reason"] == "token blow-up: 10.0x the champion's tokens per request"
