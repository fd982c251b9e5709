"""Batch hygiene (overlong rows, DAPO's soft penalty, flat groups) and the settings refused up front."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from coding_framework.config.training import RolloutConfig, TrainingConfig
from coding_framework.training.algos.hygiene import flat_groups, overlong_hygiene, soft_overlong_penalty
from coding_framework.training.trajectory import CallSpan, Trajectory


def _row(lengths: list[int], stops: list[str], reward: float = 1.0) -> Trajectory:
    calls, ids, start = [], [], 0
    for turn, (n, stop) in enumerate(zip(lengths, stops, strict=True)):
        calls.append(CallSpan(turn=turn, start=start, length=n, text="x", stop_reason=stop,
                              policy_version="0"))
        ids += [5] * n
        start += n
    return Trajectory(prompt_ids=[1], response_ids=ids, response_mask=[1] * len(ids),
                      response_logprobs=[-0.5] * len(ids), reward=reward, calls=calls)


def test_soft_overlong_penalty_is_dapos_linear_ramp() -> None:
    assert soft_overlong_penalty(10, 20, 5, 1.0) == 0.0
    assert soft_overlong_penalty(15, 20, 5, 1.0) == 0.0
    assert soft_overlong_penalty(18, 20, 5, 1.0) == pytest.approx(-0.6)
    assert soft_overlong_penalty(20, 20, 5, 0.5) == pytest.approx(-0.5)


def test_overlong_rows_are_counted_masked_and_penalised() -> None:
    rows = [_row([4], ["eos"]), _row([4, 20], ["eos", "length"]), _row([18], ["eos"])]
    kept, m = overlong_hygiene(rows, RolloutConfig(max_new_tokens=20))
    assert kept == rows and m == {"batch/overlong_rows": 1.0}  # the defaults change nothing
    kept, m = overlong_hygiene(rows, RolloutConfig(max_new_tokens=20, mask_overlong=True, overlong_buffer=5))
    assert len(kept) == 2 and m["batch/overlong_masked"] == 1.0
    assert [r.reward for r in kept] == [1.0, pytest.approx(0.4)]  # the longest call sets the penalty


def test_flat_groups_have_two_or_more_equal_rewards() -> None:
    assert flat_groups([0, 0, 1, 1, 2], [1.0, 1.0, 0.0, 1.0, 0.0]) == {0}


@pytest.mark.parametrize(("overrides", "message"), [
    ({"rollout": {"engine": "vllm"}}, "needs a LoRA policy"),
    ({"device": "cpu", "optim": {"precision": "bf16"}}, "need device: cuda"),
    ({"device": "cpu", "optim": {"gradient_checkpointing": True}}, "need device: cuda"),
    ({"rollout": {"engine_url": "localhost:8000"}}, "URL@MODEL"),
    ({"rollout": {"max_staleness": -1}}, "greater than or equal to 0"),
    ({"algo": {"off_policy_correction": "is"}}, "'none', 'tis' or 'mis'"),
    ({"algo": {"mis_bounds": [2.0, 3.0]}}, "0 < low < 1 < high"),
])
def test_settings_that_cannot_work_are_refused_at_load(overrides: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        TrainingConfig.model_validate(overrides)


def test_a_vllm_engine_with_a_lora_policy_loads() -> None:
    config = TrainingConfig.model_validate({"rollout": {"engine": "vllm", "max_staleness": 2},
                                            "policies": {"mode": "shared_lora"},
                                            "algo": {"off_policy_correction": "tis"}})
    assert config.rollout.max_staleness == 2 and config.algo.tis_cap == 2.0


@pytest.mark.parametrize(("rollout", "audit", "tolerance"), [
    ({}, {}, 1e-3),
    ({"engine": "vllm"}, {}, 1e-3),
    ({"engine": "vllm", "vllm": {"dtype": "bfloat16"}}, {}, 0.5),
    ({"engine": "vllm", "vllm": {"dtype": "bfloat16"}}, {"tolerance": 0.02}, 0.02),
])
def test_the_audit_tolerance_follows_the_engines_precision(rollout: dict, audit: dict,
                                                          tolerance: float) -> None:
    config = TrainingConfig.model_validate({"rollout": rollout, "audit": audit,
                                            "policies": {"mode": "shared_lora"}})
    assert config.audit_tolerance == tolerance
