"""`max_staleness`, the off-policy correction and the rollout engine as verl's own settings: K = 0 changes
nothing, K = 1 is verl's one-step off-policy trainer on GPUs of its own, a larger K is refused; `tis` and
`mis` are verl's rollout correction with our cap and bounds, and verl's own code checks them and applies
them as ours would. Composing verl's one-step config takes well under a second once verl is imported."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from pydantic import ValidationError
from typer.testing import CliRunner
from verl.trainer.ppo.rollout_corr_helper import compute_rollout_correction_and_rejection_mask

from coding_framework.cli.main import app
from coding_framework.config.errors import ConfigError
from coding_framework.config.training import TrainingConfig
from coding_framework.config.verl import VerlConfig
from coding_framework.training.algorithms import get_algorithm
from coding_framework.training.verl.launcher import check_rollout_settings, compose
from coding_framework.training.verl.overrides import (
    MAIN_PPO,
    ONE_STEP_OFF_POLICY,
    OffPolicy,
    VerlInputs,
    VerlMappingError,
    hydra_args,
    off_policy,
    off_policy_overrides,
    verl_entry,
    verl_overrides,
)

CORRECTION = "algorithm.rollout_correction"


def inputs(tmp_path: Path) -> VerlInputs:
    return VerlInputs(
        model_dir=tmp_path / "model", run_dir=tmp_path / "run", train_file=tmp_path / "t.parquet",
        val_file=tmp_path / "v.parquet", workflow_files={}, agent_loop_config=None,
        mlflow_uri="sqlite:////tmp/x.db",
    )


def test_synchronous_without_correction_sets_nothing_and_runs_main_ppo(tmp_path: Path) -> None:
    off = OffPolicy()
    assert off_policy_overrides(off, VerlConfig()) == {} and verl_entry(off) is MAIN_PPO
    keys = verl_overrides(TrainingConfig(model="m"), get_algorithm("grpo"), VerlConfig(), inputs(tmp_path))
    assert keys["actor_rollout_ref.rollout.name"] == "vllm" and keys["trainer.n_gpus_per_node"] == 8
    assert not any(key.startswith((CORRECTION, "rollout.")) for key in keys)


def test_staleness_one_is_verls_one_step_off_policy_trainer_on_gpus_of_its_own(tmp_path: Path) -> None:
    off = OffPolicy(max_staleness=1)
    verl = VerlConfig.model_validate({"cluster": {"nnodes": 2, "gpus_per_node": 8}})
    assert verl_entry(off) is ONE_STEP_OFF_POLICY
    assert off_policy_overrides(off, verl) == {
        "actor_rollout_ref.hybrid_engine": False, "rollout.nnodes": 2, "rollout.n_gpus_per_node": 4,
        "trainer.n_gpus_per_node": 4, f"{CORRECTION}.bypass_mode": False,
    }
    keys = verl_overrides(TrainingConfig(model="m"), get_algorithm("grpo"), verl, inputs(tmp_path), off)
    assert keys["trainer.n_gpus_per_node"] == 4  # the trainer keeps the half the rollout does not take


@pytest.mark.parametrize("k", [2, 5])
def test_a_staleness_above_one_is_refused(k: int) -> None:
    with pytest.raises(VerlMappingError, match=rf"max_staleness {k}: .*staleness_threshold"):
        off_policy_overrides(OffPolicy(max_staleness=k), VerlConfig())


@pytest.mark.parametrize(("gpus", "tp"), [(1, 1), (4, 4)])
def test_the_one_step_rollout_needs_whole_replicas_on_its_half(gpus: int, tp: int) -> None:
    verl = VerlConfig.model_validate({"cluster": {"gpus_per_node": gpus},
                                      "rollout": {"tensor_parallel_size": tp}})
    with pytest.raises(VerlMappingError, match="one-step off-policy trainer, whose rollout takes GPUs"):
        off_policy_overrides(OffPolicy(max_staleness=1), verl)


def test_corrections_are_verls_token_tis_and_sequence_geometric_mask() -> None:
    tis = off_policy_overrides(OffPolicy(correction="tis", tis_cap=3.0), VerlConfig())
    assert tis == {f"{CORRECTION}.rollout_is": "token", f"{CORRECTION}.rollout_is_threshold": 3.0,
                   f"{CORRECTION}.rollout_rs": None}
    mis = off_policy_overrides(OffPolicy(correction="mis", mis_bounds=(0.8, 1.25)), VerlConfig())
    assert mis == {f"{CORRECTION}.rollout_is": None, f"{CORRECTION}.rollout_rs": "seq_mean_k1",
                   f"{CORRECTION}.rollout_rs_threshold": "0.8_1.25"}


def test_verls_code_caps_and_masks_as_ours_would() -> None:
    """TIS weights are min(pi_train / pi_rollout, cap); MIS keeps a sequence whose geometric-mean ratio is
    within our bounds, and verl's k1 bounds are their reciprocals (asymmetric bounds tell them apart)."""
    low, high = 0.7, 1.6
    ratios = torch.tensor([[3.0, 1.0], [1.5, 1.5], [1.7, 1.7], [0.75, 0.75], [0.65, 0.65]])
    mask = torch.ones_like(ratios)
    keys = {k.removeprefix(f"{CORRECTION}."): v for k, v in off_policy_overrides(
        OffPolicy(correction="mis", mis_bounds=(low, high)), VerlConfig()).items()}
    _, kept, _ = compute_rollout_correction_and_rejection_mask(ratios.log(), torch.zeros_like(ratios), mask,
                                                               **keys)
    assert kept[:, 0].tolist() == [0.0, 1.0, 0.0, 1.0, 0.0]  # row 0: geometric mean sqrt(3) > 1.6
    keys = {k.removeprefix(f"{CORRECTION}."): v for k, v in off_policy_overrides(
        OffPolicy(correction="tis", tis_cap=2.0), VerlConfig()).items()}
    weights, kept, _ = compute_rollout_correction_and_rejection_mask(
        ratios.log(), torch.zeros_like(ratios), mask, **keys)
    assert weights is not None and torch.equal(kept, mask)
    assert math.isclose(weights.batch["rollout_is_weights"][0, 0].item(), 2.0, rel_tol=1e-6)


@pytest.mark.parametrize(("change", "message"), [
    ({"max_staleness": -1}, "max_staleness must be an integer >= 0, got -1"),
    ({"correction": "foo"}, "off_policy_correction 'foo' is not one of none, tis, mis"),
])
def test_bad_values_are_config_errors(change: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        OffPolicy(**change)


def test_the_flags_win_over_the_training_yaml() -> None:
    yaml = SimpleNamespace(rollout=SimpleNamespace(max_staleness=1), algo=SimpleNamespace(
        off_policy_correction="mis", tis_cap=3.0, mis_bounds=[0.6, 1.8]))
    assert off_policy(yaml) == OffPolicy(1, "mis", 3.0, (0.6, 1.8))
    assert off_policy(yaml, 0, "tis") == OffPolicy(0, "tis", 3.0, (0.6, 1.8))
    assert off_policy(TrainingConfig()) == OffPolicy()


def test_the_rollout_engine_is_verls_rollout_name(tmp_path: Path) -> None:
    verl = VerlConfig.model_validate({"rollout": {"name": "sglang"}})
    keys = verl_overrides(TrainingConfig(model="m"), get_algorithm("grpo"), verl, inputs(tmp_path))
    assert keys["actor_rollout_ref.rollout.name"] == "sglang"
    with pytest.raises(ValidationError, match="'vllm' or 'sglang'"):
        VerlConfig.model_validate({"rollout": {"name": "trt"}})


def _one_step_config(tmp_path: Path, correction: str, *extra: str) -> Any:
    verl = VerlConfig.model_validate({"rollout": {"name": "sglang"}})
    off = OffPolicy(max_staleness=1, correction=correction)
    keys = verl_overrides(TrainingConfig(model="m"), get_algorithm("grpo"), verl, inputs(tmp_path), off)
    return compose([*ONE_STEP_OFF_POLICY.args, *hydra_args(keys), *extra], ONE_STEP_OFF_POLICY)


def test_the_one_step_config_composes_and_passes_verls_checks(tmp_path: Path) -> None:
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    config = _one_step_config(tmp_path, "mis")
    validate_config(config, use_reference_policy=need_reference_policy(config),
                    use_critic=need_critic(config))
    gpu_only = check_rollout_settings(config, ONE_STEP_OFF_POLICY)
    correction = config.algorithm.rollout_correction
    assert (correction.rollout_rs, correction.rollout_rs_threshold, correction.bypass_mode) == (
        "seq_mean_k1", "0.5_2.0", False)
    rollout = config.actor_rollout_ref.rollout
    assert (rollout.name, rollout.n_gpus_per_node, rollout.nnodes) == ("sglang", 4, 1)  # as its main copies
    assert any("sglang is not installed here" in c for c in gpu_only)
    assert any("one-step off-policy trainer on 4 trainer and 4 rollout GPUs" in c for c in gpu_only)


def test_verls_code_refuses_a_correction_it_cannot_apply(tmp_path: Path) -> None:
    config = _one_step_config(tmp_path, "none", f"{CORRECTION}.rollout_rs=seq_mean_k9",
                              f"{CORRECTION}.rollout_rs_threshold=2.0")
    with pytest.raises(ValueError, match="Invalid rollout_rs option: seq_mean_k9"):
        check_rollout_settings(config, ONE_STEP_OFF_POLICY)


@pytest.mark.parametrize(("flag", "value", "message"), [
    ("--max-staleness", "-1", "max_staleness must be an integer >= 0, got -1"),
    ("--max-staleness", "2", "max_staleness 2: verl 0.9.1 bounds staleness in policy versions only"),
    ("--off-policy-correction", "foo", "off_policy_correction 'foo' is not one of none, tis, mis"),
    ("--rollout", "trt", "--rollout 'trt' is not one of vllm, sglang"),
])
def test_bad_values_are_a_one_line_cli_error(tmp_path: Path, flag: str, value: str, message: str) -> None:
    """Each is refused before the run directory is written."""
    run = tmp_path / "run"
    result = CliRunner().invoke(app, ["verl-train", "--dry-run", "--run-dir", str(run), flag, value])
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert result.exit_code == 2 and "Traceback" not in result.stderr, result.stderr
    assert len(errors) == 1 and message in errors[0], result.stderr
    assert not run.exists()
