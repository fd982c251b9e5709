"""The launcher's mapping onto verl: each algorithm composes against verl's config and passes verl's checks
with verl's own names for it, settings verl cannot express are errors, and the ``verl.plugins`` entry point
makes verl register our agent loop when it is imported."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from coding_framework.config import load_config
from coding_framework.config.algorithm import ALGORITHM_NAMES
from coding_framework.config.policies import LORA_TARGETS
from coding_framework.config.training import TrainingConfig
from coding_framework.config.verl import VerlConfig
from coding_framework.embedded import ensure_embedded_model
from coding_framework.training.algos.algorithms import get_algorithm
from coding_framework.training.verl.launcher import PLUGIN_GROUP, compose
from coding_framework.training.verl.overrides import (
    VerlInputs,
    VerlMappingError,
    hydra_args,
    not_applied,
    verl_overrides,
)

pytestmark = pytest.mark.slow  # importing verl and hydra, then one compose per algorithm

ROOT = Path(__file__).resolve().parents[3]


def inputs(tmp_path: Path, model: Path | None = None, adapter_dir: Path | None = None) -> VerlInputs:
    return VerlInputs(
        model_dir=model or tmp_path / "model", run_dir=tmp_path / "run", train_file=tmp_path / "t.parquet",
        val_file=tmp_path / "v.parquet", workflow_files={"graph": tmp_path / "graph.yaml"},
        agent_loop_config=None, mlflow_uri="sqlite:////tmp/x.db", adapter_dir=adapter_dir,
    )


@pytest.mark.parametrize("name", ALGORITHM_NAMES)
def test_each_algorithm_composes_and_passes_verls_checks(tmp_path: Path, name: str) -> None:
    """verl's checks build the critic's ``HFModelConfig`` (PPO), which reads a real model directory."""
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    cfg = TrainingConfig(algorithm=name, model=str(tmp_path))
    spec = get_algorithm(name)
    verl = VerlConfig.model_validate({"cluster": {"gpus_per_node": 2}})
    model = ensure_embedded_model(progress=False)
    config = compose(hydra_args(verl_overrides(cfg, spec, verl, inputs(tmp_path, model))))
    validate_config(config, use_reference_policy=need_reference_policy(config),
                    use_critic=need_critic(config))
    assert config.algorithm.adv_estimator == spec.adv_estimator
    assert need_critic(config) is spec.needs_critic
    actor = config.actor_rollout_ref.actor
    assert (actor.loss_agg_mode, actor.clip_ratio_high, actor.policy_loss.loss_mode) == (
        spec.loss_agg_mode, spec.clip_ratio_high, spec.policy_loss)
    assert actor.fsdp_config.mixed_precision.param_dtype == "bf16" and actor.fsdp_config.strategy == "fsdp2"
    assert config.trainer.use_v1 is True and config.coding_framework.graph == str(tmp_path / "graph.yaml")
    assert config.algorithm.filter_groups.enable is spec.dynamic_sampling  # DAPO's filtering, V1's own
    assert not_applied(cfg, spec) == []
    on_cpu = TrainingConfig(algorithm=name, model=str(tmp_path), device="cpu")
    assert ("dynamic_sampling (DAPO group filtering: verl v1 trainer only)" in not_applied(on_cpu, spec)) is (
        spec.dynamic_sampling)


def test_kl_modes_map_to_verls_loss_or_reward_penalty(tmp_path: Path) -> None:
    spec = get_algorithm("grpo")
    loss = verl_overrides(TrainingConfig(model="m", kl={"mode": "loss", "coef": 0.02}), spec, VerlConfig(),
                          inputs(tmp_path))
    assert loss["actor_rollout_ref.actor.use_kl_loss"] is True and loss["algorithm.use_kl_in_reward"] is False
    assert loss["actor_rollout_ref.actor.kl_loss_coef"] == 0.02
    reward = verl_overrides(TrainingConfig(model="m", kl={"mode": "reward", "controller": "adaptive"}), spec,
                            VerlConfig(), inputs(tmp_path))
    assert reward["algorithm.use_kl_in_reward"] is True and reward["algorithm.kl_ctrl.type"] == "adaptive"


def test_shared_lora_is_verls_lora_and_per_role_is_refused(tmp_path: Path) -> None:
    spec, lora = get_algorithm("grpo"), {"mode": "shared_lora", "rank": 4, "alpha": 8}
    shared = verl_overrides(TrainingConfig(model="m", policies=lora, optim={"lr": 1e-2, "eps": 1e-4}), spec,
                            VerlConfig(), inputs(tmp_path, adapter_dir=tmp_path / "adapters" / "policy"))
    model = "actor_rollout_ref.model"
    assert (shared[f"{model}.lora_rank"], shared[f"{model}.lora_alpha"]) == (4, 8)
    assert shared[f"{model}.target_modules"] == list(LORA_TARGETS)
    assert shared[f"{model}.lora_adapter_path"] == str(tmp_path / "adapters" / "policy")
    assert shared["actor_rollout_ref.actor.optim.lr"] == 1e-2  # the LoRA's lr is optim.lr in both trainers
    assert shared["actor_rollout_ref.actor.optim.override_optimizer_config"] == {"eps": 1e-4}
    full = verl_overrides(TrainingConfig(model="m"), spec, VerlConfig(), inputs(tmp_path))
    assert not any("lora" in key for key in full)


@pytest.mark.parametrize(("change", "fragment"), [
    ({"policies": {"mode": "per_role_lora"}}, "per_role_lora: verl trains one policy"),
    ({"reviewer_warm_start": {"enabled": True}}, "reviewer_warm_start.enabled"),
    ({"warm_start": {"enabled": True}}, "warm_start.enabled: verl.s trainer has no supervised warm start"),
    ({"policies": {"mode": "shared_lora", "roles": ["generator"]},
      "workflow": {"agents": {"reviewer": {"backend": "llm"}}}}, r"leave \['reviewer'\] on the base"),
])
def test_policies_verl_cannot_train_are_refused(tmp_path: Path, change: dict, fragment: str) -> None:
    with pytest.raises(VerlMappingError, match=fragment):
        verl_overrides(TrainingConfig(model="m", **change), get_algorithm("grpo"), VerlConfig(),
                       inputs(tmp_path))


@pytest.mark.parametrize(("field", "value", "fragment"), [
    ("schedule", "linear", "optim.schedule 'linear'"),
    ("grad_clip", None, "optim.grad_clip"),
])
def test_settings_verl_cannot_express_are_errors(tmp_path: Path, field: str, value: object,
                                                  fragment: str) -> None:
    cfg = TrainingConfig(model="m", optim={field: value})
    with pytest.raises(VerlMappingError, match=fragment):
        verl_overrides(cfg, get_algorithm("grpo"), VerlConfig(), inputs(tmp_path))


def test_hydra_args_quote_what_the_grammar_needs() -> None:
    args = hydra_args({"a": True, "b": None, "c": [1, "x"], "d": "/p/with space", "e": {"k": "v"}, "f": 1e-5})
    assert args == ["a=true", "b=null", "c=[1,x]", "d='/p/with space'", "e={k:v}", "f=1e-05"]


def test_shipped_verl_configs_load() -> None:
    assert load_config(VerlConfig, "verl_fsdp").cluster.gpus_per_node == 8
    assert load_config(VerlConfig, "verl_smoke").cluster.gpus_per_node == 1


def test_verl_registers_the_agent_loop_from_the_installed_entry_point(tmp_path: Path) -> None:
    """An installed distribution declaring pyproject's ``verl.plugins`` entry point (a dist-info on the path,
    as pip writes it) makes a bare ``import verl`` register our loop, which is what every Ray worker does."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"][PLUGIN_GROUP]
    info = tmp_path / "site" / "coding_framework_plugin-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: coding-framework-plugin\nVersion: 0\n")
    lines = "".join(f"{name} = {target}\n" for name, target in declared.items())
    (info / "entry_points.txt").write_text(f"[{PLUGIN_GROUP}]\n{lines}")
    probe = ("import verl\nfrom verl.experimental.agent_loop.agent_loop import _agent_loop_registry as r\n"
             "from coding_framework.training.verl.launcher import plugin_installed\n"
             "print(r['coding_framework']['_target_'], plugin_installed())")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(tmp_path / "site")])}
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-2:] == ["coding_framework.training.verl.agent_loop.CodingAgentLoop", "True"]
