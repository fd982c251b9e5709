"""`verl-train` through the real CLI: a dry run composed and validated against verl's own config and checks,
our `shared_lora` as verl's LoRA (a starting model's shared adapter continued), `--max-staleness 1` as verl's
one-step off-policy trainer with the correction as verl's rollout correction, SGLang as the rollout engine,
and bad input (an unknown override key or algorithm, no model, a batch verl rejects, policies verl cannot
train) as a one-line error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml
from transformers import AutoModelForCausalLM, AutoTokenizer
from typer.testing import CliRunner

from coding_framework.cli.main import app
from coding_framework.config.policies import PoliciesConfig, PolicyMode
from coding_framework.embedded import ensure_embedded_model
from coding_framework.llm.adapters import RoleAdapters, base_state_dict

pytestmark = pytest.mark.slow  # the first call imports verl, hydra and vLLM's config classes (~20 s here)


@pytest.fixture(scope="module")
def model_dir() -> Path:
    return ensure_embedded_model(progress=False)


def adapter_dir(out: Path, mode: PolicyMode) -> Path:
    """The embedded base plus LoRA adapters (``mode``, rank 4), laid out as a trained run saves them."""
    src = ensure_embedded_model(progress=False)
    model = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32)
    adapters = RoleAdapters(model, PoliciesConfig(mode=mode, rank=4, alpha=8))
    model.save_pretrained(out, state_dict=base_state_dict(model))
    adapters.save(out / "adapters")
    AutoTokenizer.from_pretrained(src).save_pretrained(out)
    return out


def lora_config(tmp_path: Path, mode: PolicyMode, **extra: object) -> str:
    path = tmp_path / f"{mode}.yaml"
    path.write_text(yaml.safe_dump({"policies": {"mode": mode, "rank": 4, "alpha": 8},
                                    "optim": {"lr": 1e-2}, **extra}))
    return str(path)


def verl_train(tmp_path: Path, model: Path | str, *args: str) -> tuple[int, str, str]:
    argv = ["verl-train", "--dry-run", "--model", str(model), "--run-dir", str(tmp_path / "run"), *args]
    result = CliRunner().invoke(app, argv)
    return result.exit_code, result.stdout, result.stderr


def assert_one_line_error(code: int, stderr: str, *fragments: str) -> None:
    assert code == 2, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in stderr, stderr
    assert all(f in errors[0] for f in fragments), errors[0]


def test_dry_run_is_validated_against_verls_config(tmp_path: Path, model_dir: Path) -> None:
    code, out, err = verl_train(tmp_path, model_dir, "--config", "grpo_basic", "--gpus-per-node", "4",
                                "--override", "trainer.val_before_train=false")
    assert code == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["validated"] is True
    command = result["command"]
    assert command[1:3] == ["-m", "verl.trainer.main_ppo"]
    args = set(command[3:])
    for arg in ("trainer.use_v1=true", "trainer.v1.trainer_mode=sync", "actor_rollout_ref.rollout.mode=async",
                "actor_rollout_ref.rollout.name=vllm", "actor_rollout_ref.rollout.calculate_log_probs=true",
                "actor_rollout_ref.rollout.agent.default_agent_loop=coding_framework",
                "algorithm.adv_estimator=grpo", "trainer.n_gpus_per_node=4", "trainer.resume_mode=auto",
                f"actor_rollout_ref.model.path={model_dir.resolve()}"):
        assert arg in args, arg
    assert command[-1] == "trainer.val_before_train=false"  # the user's override comes last and wins
    run = tmp_path / "run"
    assert f"trainer.default_local_dir={run.resolve() / 'checkpoints'}" in args
    assert (run / "verl_data" / "train.parquet").is_file() and (run / "workflow" / "rewards.yaml").is_file()
    assert result["train_prompts"] == 450 and result["gpus"] == 4 and result["reference_policy"] is True
    # grpo_basic sets these; its round_penalty is applied (the agent loop's reward)
    assert result["not_applied"] == ["threads", "rollout.max_batch_size", "optim.micro_batch_size",
                                     "kl.stop_kl"]
    assert "warning: kl.stop_kl is set" in err
    assert "+coding_framework.round_penalty=0.5" in args


def test_the_parquet_files_are_the_manifests_sets(tmp_path: Path, model_dir: Path) -> None:
    import pyarrow.parquet as pq

    from coding_framework.training.verl.agent_loop import DATA_SHA_KEY

    code, out, err = verl_train(tmp_path, model_dir, "--gpus-per-node", "1", "--train-data", "builtin")
    assert code == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    manifest = json.loads((tmp_path / "run" / "data_manifest.json").read_text())
    assert result["data_sha256"] == manifest["sha256"]
    # verl's own create_rl_dataset read as many prompts as the manifest counts.
    assert (result["train_prompts"], result["val_prompts"]) == (manifest["train"]["count"],
                                                                 manifest["heldout"]["count"])
    for name in ("train_file", "val_file"):
        assert pq.read_schema(result[name]).metadata[DATA_SHA_KEY].decode() == manifest["sha256"]


def test_unknown_override_key_is_a_one_line_error(tmp_path: Path, model_dir: Path) -> None:
    code, _, err = verl_train(tmp_path, model_dir, "--override", "trainer.no_such_key=1")
    assert_one_line_error(code, err, "trainer.no_such_key")


def test_unknown_algorithm_is_a_one_line_error(tmp_path: Path, model_dir: Path) -> None:
    code, _, err = verl_train(tmp_path, model_dir, "--algorithm", "sarsa")
    assert_one_line_error(code, err, "sarsa", "grpo")


def test_missing_model_is_a_one_line_error(tmp_path: Path) -> None:
    code, _, err = verl_train(tmp_path, tmp_path / "no-model")
    assert_one_line_error(code, err, "no-model", "no such model directory")


def test_an_endpoint_model_is_a_one_line_error(tmp_path: Path) -> None:
    code, _, err = verl_train(tmp_path, "http://127.0.0.1:9/v1@m")
    assert_one_line_error(code, err, "http://127.0.0.1:9/v1@m", "endpoint")


def test_prefix_guidance_is_refused_not_dropped(tmp_path: Path) -> None:
    config = tmp_path / "guided.yaml"
    config.write_text(yaml.safe_dump({"data": {"pass_rates": str(tmp_path / "ranked.jsonl"),
                                               "guidance": {"below": 0.05}}}))
    code, _, err = verl_train(tmp_path, "embedded", "--config", str(config))
    assert_one_line_error(code, err, "data.guidance", "verl")


def test_shared_lora_is_validated_as_verls_lora(tmp_path: Path, model_dir: Path) -> None:
    code, out, err = verl_train(tmp_path, "embedded", "--config", lora_config(tmp_path, "shared_lora"),
                                "--gpus-per-node", "1")
    assert code == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["validated"] is True
    args = set(result["command"][3:])
    for arg in ("actor_rollout_ref.model.lora_rank=4", "actor_rollout_ref.model.lora_alpha=8",
                "actor_rollout_ref.model.target_modules=[q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,"
                "down_proj]", "actor_rollout_ref.actor.optim.lr=0.01",
                f"actor_rollout_ref.model.path={model_dir.resolve()}"):
        assert arg in args, arg
    assert not any("lora_adapter_path" in a for a in args)  # the embedded model has no adapter to continue


def test_a_shared_adapter_continues_and_per_role_ones_are_refused(tmp_path: Path) -> None:
    shared = adapter_dir(tmp_path / "shared", "shared_lora")
    code, out, err = verl_train(tmp_path, shared, "--config", lora_config(tmp_path, "shared_lora"))
    assert code == 0, err
    args = json.loads(out.strip().splitlines()[-1])["command"]
    assert f"actor_rollout_ref.model.lora_adapter_path={shared.resolve() / 'adapters' / 'policy'}" in args
    per_role = adapter_dir(tmp_path / "per-role", "per_role_lora")
    code, _, err = verl_train(tmp_path, per_role, "--config", lora_config(tmp_path, "per_role_lora"))
    assert_one_line_error(code, err, "per-role LoRA adapters (generator, reviewer)", "verl trains one policy")


def test_per_role_lora_is_a_one_line_error(tmp_path: Path) -> None:
    code, _, err = verl_train(tmp_path, "embedded", "--config", lora_config(tmp_path, "per_role_lora"))
    assert_one_line_error(code, err, "policies.mode per_role_lora", "verl trains one policy")


def test_the_reviewer_warm_start_is_a_one_line_error(tmp_path: Path) -> None:
    config = lora_config(tmp_path, "shared_lora", reviewer_warm_start={"enabled": True})
    code, _, err = verl_train(tmp_path, "embedded", "--config", config)
    assert_one_line_error(code, err, "reviewer_warm_start.enabled")


def test_verls_own_checks_reject_a_mini_batch_larger_than_the_batch(tmp_path: Path, model_dir: Path) -> None:
    too_big = "actor_rollout_ref.actor.ppo_mini_batch_size=64"  # the batch is 8 problems
    code, _, err = verl_train(tmp_path, model_dir, "--override", too_big)
    assert_one_line_error(code, err, "ppo_mini_batch_size")


def test_staleness_one_with_tis_is_v1_separate_async_validated_by_verl(tmp_path: Path,
                                                                        model_dir: Path) -> None:
    code, out, err = verl_train(tmp_path, model_dir, "--max-staleness", "1", "--off-policy-correction", "tis")
    assert code == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["validated"] is True and result["entry"] == "verl.trainer.main_ppo"
    assert result["verl_keys"] == {
        "actor_rollout_ref.rollout.name": "vllm", "trainer.use_v1": True,
        "trainer.v1.sampler.max_off_policy_threshold": 2,
        "trainer.v1.sampler.max_off_policy_strategy": "wait", "trainer.v1.trainer_mode": "separate_async",
        "trainer.v1.separate_async.num_warmup_batches": 1,
        "trainer.v1.separate_async.parameter_sync_step": 1, "actor_rollout_ref.hybrid_engine": False,
        "actor_rollout_ref.rollout.nnodes": 1, "actor_rollout_ref.rollout.n_gpus_per_node": 4,
        "trainer.n_gpus_per_node": 4, "actor_rollout_ref.rollout.checkpoint_engine.backend": "nccl",
        "algorithm.rollout_correction.bypass_mode": False, "algorithm.rollout_correction.rollout_is": "token",
        "algorithm.rollout_correction.rollout_is_threshold": 2.0,
        "algorithm.rollout_correction.rollout_rs": None,
    }
    assert result["gpus"] == 8 and (result["max_staleness"], result["off_policy_correction"]) == (1, "tis")
    assert any("V1 separate_async trainer" in check for check in result["gpu_only_checks"])


def test_sglang_is_validated_and_the_dry_run_says_what_only_a_gpu_checks(tmp_path: Path,
                                                                          model_dir: Path) -> None:
    code, out, err = verl_train(tmp_path, model_dir, "--rollout", "sglang", "--off-policy-correction", "mis",
                                "--override", "actor_rollout_ref.rollout.gpu_memory_utilization=0.6")
    assert code == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["entry"] == "verl.trainer.main_ppo" and result["verl_keys"] == {
        "actor_rollout_ref.rollout.name": "sglang", "trainer.use_v1": True,
        "trainer.v1.trainer_mode": "sync", "trainer.v1.sampler.max_off_policy_threshold": 1,
        "trainer.v1.sampler.max_off_policy_strategy": "wait",
        "algorithm.rollout_correction.rollout_is": None,
        "algorithm.rollout_correction.rollout_rs": "seq_mean_k1",
        "algorithm.rollout_correction.rollout_rs_threshold": "0.5_2.0",
    }
    assert any("sglang is not installed here" in check for check in result["gpu_only_checks"])
    assert "warning: only a GPU run checks: the sglang rollout" in err
