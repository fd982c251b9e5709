"""Sticky weighted assignment: sessions keep their version, raising a weight moves only control sessions."""

from __future__ import annotations

import random

from coding_framework.serving.rollouts.assignment import Assigner, bucket


def _split(assigner: Assigner, sessions: list[str]) -> dict[str, str]:
    return {s: assigner.assign(s).version for s in sessions}


def test_bucket_is_stable_and_salted() -> None:
    assert bucket("user-1", "cand@abc") == bucket("user-1", "cand@abc")
    assert 0 <= bucket("user-1", "cand@abc") < 10_000
    moved = sum(bucket(f"u{i}", "a") != bucket(f"u{i}", "b") for i in range(200))
    assert moved > 150


def test_weight_matches_the_share_of_new_sessions() -> None:
    assigner = Assigner("champ", pin_table_size=100_000)
    assigner.set_weight("cand", 10)
    got = _split(assigner, [f"s{i}" for i in range(20_000)])
    share = sum(v == "cand" for v in got.values()) / len(got)
    assert 0.09 < share < 0.11


def test_raising_the_weight_moves_only_control_sessions() -> None:
    sessions = [f"s{i}" for i in range(5000)]
    a10 = Assigner("champ", pin_table_size=1)  # a tiny pin table: the hash alone decides
    a10.set_weight("cand", 10)
    at10 = _split(a10, sessions)
    a10.set_weight("cand", 50)
    at50 = _split(a10, sessions)
    assert all(at50[s] == "cand" for s in sessions if at10[s] == "cand")
    assert 0.45 < sum(v == "cand" for v in at50.values()) / len(sessions) < 0.55


def test_pinned_sessions_keep_their_version_while_weights_move() -> None:
    assigner = Assigner("champ", pin_table_size=1000)
    assigner.set_weight("cand", 50)
    first = _split(assigner, [f"s{i}" for i in range(500)])
    assigner.set_weight("cand", 100)
    assert _split(assigner, list(first)) == first
    assert assigner.assign("a-new-session").version == "cand"
    assert assigner.assign("s0").fresh is False


def test_the_pin_table_is_bounded_lru() -> None:
    assigner = Assigner("champ", pin_table_size=2)
    assigner.set_weight("cand", 50)
    for s in ("a", "b", "a", "c"):  # "b" is the least recently used when "c" arrives
        assigner.assign(s)
    assert assigner.assign("a").fresh is False
    assert assigner.assign("b").fresh is True


def test_after_a_rollback_no_request_reaches_the_candidate() -> None:
    assigner = Assigner("champ", pin_table_size=1000, rng=random.Random(0))
    assigner.set_weight("cand", 50)
    sessions = [f"s{i}" for i in range(400)]
    assert "cand" in _split(assigner, sessions).values()
    assigner.drop_candidate()
    assert set(_split(assigner, sessions).values()) == {"champ"}
    assert {assigner.assign(None).version for _ in range(200)} == {"champ"}


def test_promotion_moves_everyone_to_the_new_champion() -> None:
    assigner = Assigner("champ", pin_table_size=1000)
    assigner.set_weight("cand", 10)
    sessions = [f"s{i}" for i in range(300)]
    _split(assigner, sessions)
    assert assigner.promote() == "champ"
    assert set(_split(assigner, sessions).values()) == {"cand"}
    assert assigner.champion == "cand" and assigner.candidate is None


def test_sessionless_requests_are_fresh_random_assignments() -> None:
    assigner = Assigner("champ", pin_table_size=10, rng=random.Random(1))
    assigner.set_weight("cand", 30)
    got = [assigner.assign(None) for _ in range(3000)]
    assert all(a.fresh for a in got)
    assert 0.26 < sum(a.version == "cand" for a in got) / 3000 < 0.34
