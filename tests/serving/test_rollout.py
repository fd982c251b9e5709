"""The real RolloutManager under simulated traffic: canary steps advance on the verdict, rollbacks happen
on a pass-rate drop, an error burst and a sample-ratio mismatch, and shadow never answers."""

from __future__ import annotations

import asyncio
import itertools
import random

import pytest

from coding_framework.config.rollout import RolloutPolicy
from coding_framework.serving.rollouts.assignment import bucket
from coding_framework.serving.rollouts.manager import RolloutConflict, RolloutManager
from coding_framework.testing.rollouts import RecordingHooks, Traffic

CHAMP, CAND = "champ@0000", "cand@0000"
POLICY = RolloutPolicy(margin=0.3, min_graded=20, drain_s=0, steps=[10, 50, 100])


@pytest.fixture
def hooks() -> RecordingHooks:
    return RecordingHooks()


@pytest.fixture
async def manager(hooks: RecordingHooks, tmp_path):  # type: ignore[no-untyped-def]
    # Seeded: which requests a shadow mirrors is a coin flip per request, and the share is checked below.
    m = RolloutManager(CHAMP, POLICY, hooks, tracking_uri=f"sqlite:///{tmp_path}/mlflow.db",
                       rng=random.Random(0))
    yield m
    await m.aclose()


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0.01)


async def test_canary_steps_advance_on_non_inferiority_and_promote(manager, hooks) -> None:  # type: ignore[no-untyped-def]
    started = await manager.start("cand", "canary", None)
    assert started["status"] == "running" and started["weights"] == {CHAMP: 90, CAND: 10}
    final = Traffic(manager, {CHAMP: 0.6, CAND: 0.6}).run_until_done(started["id"], 5000)
    assert final["status"] == "promoted", final["reason"]
    actions = [d["action"] for d in final["decisions"]]
    assert actions == ["start", "advance", "advance", "promote"]
    assert [d["weights"][CAND] for d in final["decisions"]] == [10, 50, 100, 100]
    # Each step needed its own graded candidate requests; never a timer.
    graded = [d["arms"][CAND]["graded"] for d in final["decisions"]]
    assert all(b - a >= POLICY.min_graded for a, b in itertools.pairwise(graded))
    assert "non-inferior" in final["reason"]
    assert manager.champion == CAND and final["weights"] == {CHAMP: 0, CAND: 100}
    await _settle()
    assert hooks.retired == [CHAMP]


async def test_a_pass_rate_drop_rolls_back_and_nothing_reaches_the_candidate_after(manager, hooks) -> None:  # type: ignore[no-untyped-def]
    started = await manager.start("cand", "canary", [50, 100])
    traffic = Traffic(manager, {CHAMP: 0.6, CAND: 0.1})
    final = traffic.run_until_done(started["id"], 5000)
    assert final["status"] == "rolled_back"
    assert final["reason"].startswith("significant pass-rate drop")
    assert final["test"]["upper"] < 0
    assert final["arms"][CAND]["graded"] < 100
    after = len(traffic.routes)
    for i in range(500):
        traffic.request(f"session-{i}")
        traffic.request(None)
    assert {r.version for r in traffic.routes[after:]} == {CHAMP}
    assert all(r.shadow is None for r in traffic.routes[after:])
    assert manager.champion == CHAMP
    await _settle()
    assert hooks.retired == [CAND]


async def test_an_error_burst_rolls_back_before_any_grade(manager) -> None:  # type: ignore[no-untyped-def]
    started = await manager.start("cand", "canary", [20, 100])
    traffic = Traffic(manager, {CHAMP: 0.6, CAND: 0.6}, error_rates={CAND: 1.0, CHAMP: 0.01})
    final = traffic.run_until_done(started["id"], 2000, graded=False)
    assert final["status"] == "rolled_back"
    assert final["reason"].startswith("error burst")
    assert final["arms"][CAND]["graded"] == 0
    assert final["arms"][CAND]["requests"] <= 10


async def test_a_few_errors_alone_do_not_roll_back_a_healthy_candidate(manager) -> None:  # type: ignore[no-untyped-def]
    started = await manager.start("cand", "canary", [50, 100])
    traffic = Traffic(manager, {CHAMP: 0.6, CAND: 0.6}, error_rates={CAND: 0.05, CHAMP: 0.05})
    final = traffic.run_until_done(started["id"], 3000)
    assert final["status"] == "promoted", final["reason"]


async def test_shadow_never_answers_from_the_candidate_and_promotes_when_non_inferior(manager) -> None:  # type: ignore[no-untyped-def]
    started = await manager.start("cand", "shadow", None)
    assert started["weights"] == {CHAMP: 100, CAND: 0}
    traffic = Traffic(manager, {CHAMP: 0.5, CAND: 0.55})
    final = traffic.run_until_done(started["id"], 5000)
    assert final["status"] == "promoted", final["reason"]
    during = traffic.routes[:-1]
    assert {r.version for r in during} == {CHAMP}
    mirrored = sum(r.shadow == CAND for r in during) / len(during)
    p = POLICY.shadow_share  # each request is mirrored with probability p: within 3 binomial sd of it
    assert abs(mirrored - p) < 3 * (p * (1 - p) / len(during)) ** 0.5
    assert [d["action"] for d in final["decisions"]] == ["start", "promote"]


async def test_shadow_rolls_back_a_worse_candidate(manager) -> None:  # type: ignore[no-untyped-def]
    started = await manager.start("cand", "shadow", None)
    final = Traffic(manager, {CHAMP: 0.6, CAND: 0.0}).run_until_done(started["id"], 5000)
    assert final["status"] == "rolled_back" and "pass-rate drop" in final["reason"]


async def test_immediate_swaps_at_once_and_compares_with_the_champions_history(manager) -> None:  # type: ignore[no-untyped-def]
    before = Traffic(manager, {CHAMP: 0.6})
    for i in range(200):
        before.request(f"old-{i}")
    started = await manager.start("cand", "immediate", None)
    assert started["weights"] == {CHAMP: 0, CAND: 100}
    assert started["arms"][CHAMP]["graded"] == 200
    traffic = Traffic(manager, {CHAMP: 0.6, CAND: 0.05})
    assert traffic.request("brand-new").version == CAND
    final = traffic.run_until_done(started["id"], 2000)
    assert final["status"] == "rolled_back"


async def test_a_sample_ratio_mismatch_rolls_back(manager) -> None:  # type: ignore[no-untyped-def]
    started = await manager.start("cand", "canary", [10, 100])
    # A client population that hashes entirely into the candidate's 10%: the observed split is 100/0.
    skewed = [s for s in (f"u{i}" for i in range(20_000)) if bucket(s, CAND) < 1000][:200]
    traffic = Traffic(manager, {CHAMP: 0.6, CAND: 0.6})
    for s in skewed:
        traffic.request(s, graded=False)
        if manager.status(started["id"])["status"] != "running":
            break
    final = manager.status(started["id"])
    assert final["status"] == "rolled_back" and final["reason"].startswith("sample ratio mismatch")
    assert final["srm"]["log_evidence"] >= final["srm"]["threshold"]


async def test_start_rejects_conflicts_and_bad_input(manager, hooks) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="unknown strategy"):
        await manager.start("cand", "yolo", None)
    with pytest.raises(ValueError, match="strictly increasing"):
        await manager.start("cand", "canary", [50, 10])
    with pytest.raises(ValueError, match="cannot resolve"):
        await manager.start("bad-spec", "canary", None)
    with pytest.raises(ValueError, match="champion"):
        await manager.start("champ", "canary", None)
    first = await manager.start("cand", "canary", None)
    with pytest.raises(RolloutConflict, match=first["id"]):
        await manager.start("cand2", "canary", None)
    with pytest.raises(KeyError):
        manager.status("ro-nope")
    assert [r["id"] for r in manager.list()] == [first["id"]]
