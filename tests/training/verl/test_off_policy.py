"""`max_staleness`, the off-policy correction and the rollout engine as verl's own settings: on GPUs the V1
trainer, K = 0 its `sync` mode, K >= 1 its `separate_async` mode on rollout GPUs of its own, each bounded to
K + 1 model versions; the CPU path's legacy trainer refuses K >= 1. `tis` and `mis` are verl's rollout
correction with our cap and bounds, and verl's own code checks them (and builds the V1 trainer from the
config) and applies them as ours would."""

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
from coding_framework.training.algos.algorithms import get_algorithm
from coding_framework.training.verl.launcher import check_rollout_settings, compose
from coding_framework.training.verl.overrides import (
    MAIN_PPO,
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


SAMPLER = "trainer.v1.sampler"


def test_synchronous_is_the_v1_sync_trainer_bounded_to_one_version(tmp_path: Path) -> None:
    off = OffPolicy()
    assert off_policy_overrides(off, VerlConfig()) == {
        "trainer.use_v1": True, "trainer.v1.trainer_mode": "sync", f"{SAMPLER}.max_off_policy_threshold": 1,
        f"{SAMPLER}.max_off_policy_strategy": "wait"}
    assert verl_entry(off) is MAIN_PPO
    keys = verl_overrides(TrainingConfig(model="m"), get_algorithm("grpo"), VerlConfig(), inputs(tmp_path))
    assert keys["actor_rollout_ref.rollout.name"] == "vllm" and keys["trainer.n_gpus_per_node"] == 8
    assert not any(key.startswith((CORRECTION, "rollout.")) for key in keys)


@pytest.mark.parametrize("k", [1, 2, 5])
def test_staleness_k_is_v1_separate_async_bounded_to_k_plus_one_versions(tmp_path: Path, k: int) -> None:
    off = OffPolicy(max_staleness=k)
    verl = VerlConfig.model_validate({"cluster": {"nnodes": 2, "gpus_per_node": 8}})
    assert off_policy_overrides(off, verl, minibatches=2) == {
        "trainer.use_v1": True, f"{SAMPLER}.max_off_policy_threshold": k + 1,
        f"{SAMPLER}.max_off_policy_strategy": "wait", "trainer.v1.trainer_mode": "separate_async",
        "trainer.v1.separate_async.num_warmup_batches": k, "trainer.v1.separate_async.parameter_sync_step": 2,
        "actor_rollout_ref.hybrid_engine": False, "actor_rollout_ref.rollout.nnodes": 2,
        "actor_rollout_ref.rollout.n_gpus_per_node": 4, "trainer.n_gpus_per_node": 4,
        "actor_rollout_ref.rollout.checkpoint_engine.backend": "nccl", f"{CORRECTION}.bypass_mode": False,
    }
    keys = verl_overrides(TrainingConfig(model="m"), get_algorithm("grpo"), verl, inputs(tmp_path), off)
    assert keys["trainer.n_gpus_per_node"] == 4  # the trainer keeps the half the rollout does not take


@pytest.mark.parametrize("k", [1, 2])
def test_the_cpu_paths_legacy_trainer_refuses_staleness(k: int) -> None:
    with pytest.raises(VerlMappingError, match=rf"max_staleness {k}: the CPU path runs verl's legacy"):
        off_policy_overrides(OffPolicy(max_staleness=k, v1=False), VerlConfig())
    assert off_policy_overrides(OffPolicy(v1=False), VerlConfig()) == {"trainer.use_v1": False}


@pytest.mark.parametrize(("gpus", "tp"), [(1, 1), (4, 4)])
def test_the_async_rollout_needs_whole_replicas_on_its_half(gpus: int, tp: int) -> None:
    verl = VerlConfig.model_validate({"cluster": {"gpus_per_node": gpus},
                                      "rollout": {"tensor_parallel_size": tp}})
    with pytest.raises(VerlMappingError, match="separate_async trainer, whose rollout takes GPUs"):
        off_policy_overrides(OffPolicy(max_staleness=1), verl)


def _correction_keys(keys: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in keys.items() if k.startswith(CORRECTION)}


def test_corrections_are_verls_token_tis_and_sequence_geometric_mask() -> None:
    tis = _correction_keys(off_policy_overrides(OffPolicy(correction="tis", tis_cap=3.0), VerlConfig()))
    assert tis == {f"{CORRECTION}.rollout_is": "token", f"{CORRECTION}.rollout_is_threshold": 3.0,
                   f"{CORRECTION}.rollout_rs": None}
    mis = _correction_keys(off_policy_overrides(OffPolicy(correction="mis", mis_bounds=(0.8, 1.25)),
                                                VerlConfig()))
    assert mis == {f"{CORRECTION}.rollout_is": None, f"{CORRECTION}.rollout_rs": "seq_mean_k1",
                   f"{CORRECTION}.rollout_rs_threshold": "0.8_1.25"}


def test_verls_code_caps_and_masks_as_ours_would() -> None:
    """TIS weights are min(pi_train / pi_rollout, cap); MIS keeps a sequence whose geometric-mean ratio is
    within our bounds, and verl's k1 bounds are their reciprocals (asymmetric bounds tell them apart)."""
    low, high = 0.7, 1.6
    ratios = torch.tensor([[3.0, 1.0], [1.5, 1.5], [1.7, 1.7], [0.75, 0.75], [0.65, 0.65]])
    mask = torch.ones_like(ratios)
    keys = {k.removeprefix(f"{CORRECTION}."): v for k, v in _correction_keys(off_policy_overrides(
        OffPolicy(correction="mis", mis_bounds=(low, high)), VerlConfig())).items()}
    _, kept, _ = compute_rollout_correction_and_rejection_mask(ratios.log(), torch.zeros_like(ratios), mask,
                                                               **keys)
    assert kept[:, 0].tolist() == [0.0, 1.0, 0.0, 1.0, 0.0]  # row 0: geometric mean sqrt(3) > 1.6
    keys = {k.removeprefix(f"{CORRECTION}."): v for k, v in _correction_keys(off_policy_overrides(
        OffPolicy(correction="tis", tis_cap=2.0), VerlConfig())).items()}
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
    yaml = SimpleNamespace(rollout=SimpleNamespace(max_staleness=1), device="cuda", algo=SimpleNamespace(
        off_policy_correction="mis", tis_cap=3.0, mis_bounds=[0.6, 1.8]))
    assert off_policy(yaml) == OffPolicy(1, "mis", 3.0, (0.6, 1.8))
    assert off_policy(yaml, 0, "tis") == OffPolicy(0, "tis", 3.0, (0.6, 1.8))
    assert off_policy(TrainingConfig()) == OffPolicy()
    assert off_policy(TrainingConfig(device="cpu")) == OffPolicy(v1=False)  # the CPU path: legacy


def test_the_rollout_engine_is_verls_rollout_name(tmp_path: Path) -> None:
    verl = VerlConfig.model_validate({"rollout": {"name": "sglang"}})
    keys = verl_overrides(TrainingConfig(model="m"), get_algorithm("grpo"), verl, inputs(tmp_path))
    assert keys["actor_rollout_ref.rollout.name"] == "sglang"
    with pytest.raises(ValidationError, match="'vllm' or 'sglang'"):
        VerlConfig.model_validate({"rollout": {"name": "trt"}})


def _v1_config(tmp_path: Path, correction: str, *extra: str, k: int = 1) -> Any:
    verl = VerlConfig.model_validate({"rollout": {"name": "sglang"}})
    off = OffPolicy(max_staleness=k, correction=correction)
    keys = verl_overrides(TrainingConfig(model="m"), get_algorithm("grpo"), verl, inputs(tmp_path), off)
    return compose([*hydra_args(keys), *extra])


@pytest.mark.parametrize("k", [0, 1, 2])
def test_the_v1_config_composes_and_passes_verls_checks(tmp_path: Path, k: int) -> None:
    """verl's validate_config, then its V1 trainer built from the config (the mode's own checks and the
    replay buffer that bounds staleness), where TransferQueue is installed."""
    import importlib.util

    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    config = _v1_config(tmp_path, "mis", k=k)
    validate_config(config, use_reference_policy=need_reference_policy(config),
                    use_critic=need_critic(config))
    gpu_only = check_rollout_settings(config)
    assert config.trainer.use_v1 is True
    assert config.trainer.v1.trainer_mode == ("sync" if k == 0 else "separate_async")
    assert config.trainer.v1.sampler.max_off_policy_threshold == k + 1
    correction = config.algorithm.rollout_correction
    assert (correction.rollout_rs, correction.rollout_rs_threshold) == ("seq_mean_k1", "0.5_2.0")
    assert any("sglang is not installed here" in c for c in gpu_only)
    if k:
        assert correction.bypass_mode is False
        rollout = config.actor_rollout_ref.rollout
        assert (rollout.name, rollout.n_gpus_per_node, rollout.nnodes) == ("sglang", 4, 1)
        assert any("V1 separate_async trainer on 4 trainer and 4 rollout GPUs" in c for c in gpu_only)
    installed = importlib.util.find_spec("transfer_queue") is not None
    assert any("transferqueue is not installed" in c for c in gpu_only) is not installed


def test_verls_v1_code_refuses_a_bound_it_cannot_apply(tmp_path: Path) -> None:
    pytest.importorskip("transfer_queue")
    config = _v1_config(tmp_path, "none", f"{SAMPLER}.max_off_policy_strategy=evict")
    with pytest.raises(AssertionError, match="Invalid max off policy strategy: evict"):
        check_rollout_settings(config)


def test_verls_code_refuses_a_correction_it_cannot_apply(tmp_path: Path) -> None:
    config = _v1_config(tmp_path, "none", f"{CORRECTION}.rollout_rs=seq_mean_k9",
                        f"{CORRECTION}.rollout_rs_threshold=2.0")
    with pytest.raises(ValueError, match="Invalid rollout_rs option: seq_mean_k9"):
        check_rollout_settings(config)


@pytest.mark.parametrize(("args", "message"), [
    (["--max-staleness", "-1"], "max_staleness must be an integer >= 0, got -1"),
    (["--max-staleness", "2", "--config", "verl_cpu"],
     "max_staleness 2: the CPU path runs verl's legacy synchronous trainer"),
    (["--off-policy-correction", "foo"], "off_policy_correction 'foo' is not one of none, tis, mis"),
    (["--rollout", "trt"], "--rollout 'trt' is not one of vllm, sglang"),
])
def test_bad_values_are_a_one_line_cli_error(tmp_path: Path, args: list[str], message: str) -> None:
    """Each is refused before the run directory is written."""
    run = tmp_path / "run"
    result = CliRunner().invoke(app, ["verl-train", "--dry-run", "--run-dir", str(run), *args])
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert result.exit_code == 2 and "Traceback" not in result.stderr, result.stderr
    assert len(errors) == 1 and message in errors[0], result.stderr
    assert not run.exists()
