"""Training rewards refuse verdicts of the in-process tier unless the config opts in."""

from __future__ import annotations

import re

import pytest

from coding_framework.config import RewardConfig, TrainingConfig, load_config
from coding_framework.grading import ExecutionResult
from coding_framework.problems import builtin_problems, load_benchmark
from coding_framework.rewards import CompositeReward, CorrectnessReward
from coding_framework.rewards.tiers import UntrustedTierError
from tests.sandbox.bigcodebench_env import DATA

BCB = load_benchmark("bigcodebench", DATA)[0]
FN = builtin_problems()[0]
IN_PROCESS_PASS = ExecutionResult(
    passed=True, status="passed", tests_passed=3, tests_total=3, tier="in_process"
)
HARDENED_PASS = ExecutionResult(passed=True, status="passed", tests_passed=1, tests_total=1)


@pytest.mark.parametrize("reward", [CorrectnessReward, CompositeReward])
def test_refused_by_default(reward):
    with pytest.raises(UntrustedTierError, match="allow_in_process_tier") as err:
        reward(RewardConfig()).score_batch([(BCB, BCB.solutions[0])], [IN_PROCESS_PASS])
    assert "BigCodeBench/0" in str(err.value) and "docs/trust_tiers.md" in str(err.value)


def test_refused_before_grading_and_by_result_tier():
    # no results: refused on the problem's format, before anything runs (the reward has no grader here)
    with pytest.raises(UntrustedTierError):
        CorrectnessReward(RewardConfig()).score_batch([(BCB, "x")])
    # a function-level problem whose result came from the in-process tier is refused too
    with pytest.raises(UntrustedTierError, match=FN.task_id):
        CorrectnessReward(RewardConfig()).score_batch([(FN, "x")], [IN_PROCESS_PASS])


def test_opt_in_scores_it():
    config = RewardConfig(allow_in_process_tier=True)
    out = CorrectnessReward(config).score_batch([(BCB, "x"), (FN, "y")], [IN_PROCESS_PASS, HARDENED_PASS])
    assert [o.value for o in out] == [1.0, 1.0]
    assert CorrectnessReward(RewardConfig()).score_batch([(FN, "y")], [HARDENED_PASS])[0].value == 1.0


def test_the_key_the_refusal_names_opts_a_training_config_in():
    with pytest.raises(UntrustedTierError) as err:
        CorrectnessReward(RewardConfig()).score_batch([(BCB, "x")], [IN_PROCESS_PASS])
    named = re.search(r"set (\S+): true", str(err.value))
    assert named is not None, str(err.value)
    config = load_config(TrainingConfig, overrides={named.group(1): True})  # strict: a wrong key fails
    [out] = CorrectnessReward(config.reward.function).score_batch([(BCB, "x")], [IN_PROCESS_PASS])
    assert out.value == 1.0
