from __future__ import annotations

import pytest

from coding_framework.config import ConfigError, RewardConfig, load_config
from coding_framework.grading import ExecutionResult, Grader
from coding_framework.problems import Problem
from coding_framework.rewards import CompositeReward, CorrectnessReward, EfficiencyReward, StyleReward
from coding_framework.rewards.efficiency import MIN_TIME_S

TRIANGLE = Problem(
    task_id="t/triangle",
    prompt="def triangle(n):\n",
    entry_point="triangle",
    test_code="assert triangle(0) == 0\nassert triangle(3) == 6\nassert triangle(4) == 10\n"
    "assert triangle(3_000_000) == 4500001500000\n",
    solutions=["def triangle(n):\n    return n * (n + 1) // 2\n"],
)
CLEAN = TRIANGLE.solutions[0]
SLOW = "def triangle(n):\n    total = 0\n    for i in range(n + 1):\n        total += i\n    return total\n"
PARTIAL = "def triangle(n):\n    return n * (n + 1) // 2 if n < 5 else 0\n"
WRONG = "def triangle(n):\n    return -1\n"
MESSY = "import os, sys\ndef triangle(n) :\n    l = 1\n    if n == None: return 0\n    return n*(n+1)//2\n"


@pytest.fixture(scope="module")
def grader():
    with Grader() as g:
        yield g


def test_correctness_binary_and_fraction(grader):
    items = [(TRIANGLE, CLEAN), (TRIANGLE, PARTIAL), (TRIANGLE, WRONG)]
    binary = CorrectnessReward(RewardConfig(correctness_mode="binary"), grader)(items)
    fraction = CorrectnessReward(RewardConfig(correctness_mode="fraction"), grader)(items)
    assert binary == [1.0, 0.0, 0.0]
    assert fraction == [1.0, 0.75, 0.0]


def test_style_uses_ruff_findings():
    outs = StyleReward().score_batch([(TRIANGLE, CLEAN), (TRIANGLE, MESSY), (TRIANGLE, "def triangle(:\n")])
    assert outs[0].value == 1.0 and outs[0].raw == 0
    assert -1.0 <= outs[1].value < 1.0 and outs[1].raw >= 3
    assert {"F401", "E711"} <= set(outs[1].details["codes"])
    assert outs[2].value == -1.0 and outs[2].details["syntax_error"]


def test_efficiency_penalises_a_slow_but_correct_solution(grader):
    reward = EfficiencyReward(RewardConfig(), grader, repeats=2)
    fast, slow, wrong = reward.score_batch([(TRIANGLE, CLEAN), (TRIANGLE, SLOW), (TRIANGLE, WRONG)])
    assert fast.value == pytest.approx(1.0)
    assert slow.raw > 10 and slow.value == -1.0
    assert wrong.value == 0.0 and wrong.details["reason"] == "program failed"


def test_efficiency_tolerates_timing_noise_and_reaches_minus_one_at_max_ratio(grader):
    reward = EfficiencyReward(RewardConfig(efficiency_max_ratio=10.0, efficiency_tolerance=1.5), grader)
    ref = reward.reference_time([TRIANGLE])[TRIANGLE.task_id]
    assert ref is not None and ref > 0
    ratios = [1.0, 1.4, (1.5 * 10.0) ** 0.5, 10.0, 30.0]
    floor = max(ref, MIN_TIME_S)
    results = [ExecutionResult(passed=True, status="passed", cpu_time_s=floor * r) for r in ratios]
    outs = reward.score_batch([(TRIANGLE, CLEAN)] * len(ratios), results)
    assert [round(o.value, 6) for o in outs] == [1.0, 1.0, 0.0, -1.0, -1.0]


def test_efficiency_tolerance_must_stay_below_max_ratio(tmp_path):
    bad = tmp_path / "w.yaml"
    bad.write_text("efficiency_max_ratio: 2.0\nefficiency_tolerance: 2.0\n")
    with pytest.raises(ConfigError, match="efficiency_tolerance"):
        load_config(RewardConfig, bad)


def test_composite_uses_configured_weights_and_stays_in_range(grader, tmp_path):
    cfg = load_config(RewardConfig, "reward_weights")
    assert cfg.weights == {"correctness": 0.7, "style": 0.2, "efficiency": 0.1}
    items = [(TRIANGLE, CLEAN), (TRIANGLE, SLOW), (TRIANGLE, MESSY), (TRIANGLE, WRONG)]
    outs = CompositeReward(cfg, grader).score_batch(items)
    assert all(-1.0 <= o.value <= 1.0 for o in outs)
    assert outs[0].value == pytest.approx(1.0)
    assert outs[0].value > outs[1].value > outs[3].value
    assert outs[3].details["passed"] is False
    only_correct = tmp_path / "w.yaml"
    only_correct.write_text("weights: {correctness: 1.0, style: 0.0, efficiency: 0.0}\n")
    outs = CompositeReward(load_config(RewardConfig, only_correct), grader).score_batch(items)
    assert [o.value for o in outs] == [1.0, 1.0, 1.0, 0.0]
    assert set(outs[0].details) == {"correctness", "passed"}


def test_bad_weights_are_rejected_with_a_fix(tmp_path):
    bad = tmp_path / "w.yaml"
    bad.write_text("weights: {correctness: 0, style: 0, efficiency: 0}\n")
    with pytest.raises(ConfigError, match="at least one reward weight"):
        load_config(RewardConfig, bad)
    bad.write_text("weights: {style: -1}\n")
    with pytest.raises(ConfigError, match=r"weights\.style: Input should be greater than or equal to 0"):
        load_config(RewardConfig, bad)
    bad.write_text("weights: {corectness: 1}\n")
    typo = load_config(RewardConfig, bad)  # the config layer cannot see the reward registry
    with pytest.raises(ConfigError, match=r"unknown reward 'corectness'; valid rewards: \['correctness', "):
        CompositeReward(typo)


async def test_async_batch_matches_sync(grader):
    reward = CorrectnessReward(RewardConfig(correctness_mode="fraction"), grader)
    items = [(TRIANGLE, CLEAN), (TRIANGLE, PARTIAL)]
    outs = await reward.ascore_batch(items)
    assert [o.value for o in outs] == reward(items)
