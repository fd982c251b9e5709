"""Launch verl's PPO trainer (``verl.trainer.main_ppo``) on our training graph, after checking the config
with verl's own code.

``prepare`` resolves the starting model (``TrainingConfig.model``: a directory, the embedded model or a
registry version, downloaded; its shared LoRA adapter continues when ``policies`` matches it), writes what
the workers read into the run directory (the parquet data of ``write_verl_dataset``, the workflow and
reward YAMLs ``CodingAgentLoop`` loads) and builds the overrides (``overrides.verl_overrides``).
``compose`` builds the config exactly as ``main_ppo`` would: hydra's compose API over verl's
``trainer/config/ppo_trainer.yaml``. ``validate`` runs the checks ``main_ppo`` and its
``TaskRunner`` run before placing any worker: ``validate_config`` (batch sizes against GPUs, micro-batches,
the actor and critic dataclasses), the typed ``RolloutConfig``, ``AlgoConfig`` and ``HFModelConfig`` (which
loads the tokenizer), verl's ``RLHFDataset`` over our parquet (so every prompt fits ``max_prompt_length``),
and that our agent loop is in verl's registry. ``launch`` runs the command and streams its output.

Our agent loop reaches every Ray worker through the ``verl.plugins`` entry point (verl imports each plugin
in ``verl/__init__.py``, which every worker imports). Where the package is not installed with that entry
point (a source checkout on ``PYTHONPATH``), the run falls back to verl's ``agent_loop_config_path``.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from importlib.resources import files
from pathlib import Path
from typing import Any

import yaml

from coding_framework.config.errors import ConfigError
from coding_framework.config.training import TrainingConfig
from coding_framework.config.verl import VerlConfig
from coding_framework.models import ADAPTERS_DIR, ResolvedModel
from coding_framework.models.registry import run_store_uri
from coding_framework.training.data import TrainingData, prepare_data
from coding_framework.training.setup import check_adapters, resolve_spec, starting_model
from coding_framework.training.verl.agent_loop import AGENT_NAME, CodingAgentLoop, write_verl_dataset
from coding_framework.training.verl.overrides import (
    VerlInputs,
    VerlMappingError,
    hydra_args,
    not_applied,
    verl_overrides,
)

__all__ = ["PLUGIN_GROUP", "VerlLaunch", "compose", "launch", "plugin_installed", "prepare", "validate"]

PLUGIN_GROUP = "verl.plugins"
AGENT_LOOP_MODULE = CodingAgentLoop.__module__


@dataclass(frozen=True)
class VerlLaunch:
    """A prepared run: the hydra overrides, the command that runs verl and the environment it needs."""

    args: list[str]
    command: list[str]
    env: dict[str, str]
    inputs: VerlInputs
    registration: str
    not_applied: list[str]
    data_sha256: str


def plugin_installed() -> bool:
    """Whether the installed distribution declares our agent loop as a ``verl.plugins`` entry point."""
    points = metadata.entry_points(group=PLUGIN_GROUP)
    return any(ep.value.split(":")[0] == AGENT_LOOP_MODULE for ep in points)


def _write_yaml(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path.resolve()


def adapter_dir(model: ResolvedModel, cfg: TrainingConfig) -> Path | None:
    """The starting model's shared adapter that the run continues (None: it has none). Per-role adapters,
    or adapters ``cfg.policies`` would not continue, are a one-line error."""
    found = model.policies
    if found is not None and found.mode == "per_role_lora":
        held = ", ".join(a.name for a in model.adapters)
        raise VerlMappingError(f"model {model.spec!r} holds per-role LoRA adapters ({held}): verl trains one "
                               "policy, so it can continue one shared adapter at most; start from the base "
                               "model or a shared_lora model")
    if not check_adapters(model, cfg):
        return None
    assert model.model_dir is not None
    return model.model_dir / ADAPTERS_DIR / model.adapters[0].name


def _write_inputs(cfg: TrainingConfig, model: ResolvedModel, run_dir: Path, mlflow_uri: str | None,
                  sets: TrainingData) -> VerlInputs:
    """The parquet files come from the same cleaned sets as the local trainer's (``prepare_data``), and the
    manifest with their sha256 goes beside them."""
    train, heldout = sets.train, sets.heldout
    sets.write_manifest(run_dir)
    data = run_dir / "verl_data"
    parts = {"agents": cfg.workflow.agents, "graph": cfg.workflow.graph, "sandbox": cfg.workflow.sandbox,
             "rewards": cfg.reward.function}
    workflow = {key: _write_yaml(run_dir / "workflow" / f"{key}.yaml", part.model_dump(mode="json"))
                for key, part in parts.items()}
    loop_config = None
    if not plugin_installed():
        loop_config = _write_yaml(run_dir / "workflow" / "agent_loops.yaml", [
            {"name": AGENT_NAME, "_target_": f"{AGENT_LOOP_MODULE}.{CodingAgentLoop.__name__}"}])
    assert model.model_dir is not None
    return VerlInputs(
        model_dir=model.model_dir.resolve(), run_dir=run_dir.resolve(),
        train_file=write_verl_dataset(train, data / "train.parquet", "train", sets.sha256).resolve(),
        val_file=write_verl_dataset(heldout, data / "val.parquet", "val", sets.sha256).resolve(),
        workflow_files=workflow, agent_loop_config=loop_config,
        mlflow_uri=mlflow_uri or cfg.tracking.mlflow_uri or run_store_uri(run_dir),
        adapter_dir=adapter_dir(model, cfg),
    )


def prepare(cfg: TrainingConfig, verl: VerlConfig, run_dir: Path, extra: list[str] | None = None, *,
            model: ResolvedModel | None = None) -> VerlLaunch:
    """Write the run's inputs and build the command; ``extra`` are the user's overrides (they win).
    ``model``: ``cfg.model`` already resolved (else resolved here; an endpoint is a ConfigError)."""
    model = model or starting_model(cfg, progress=False)
    if model.model_dir is None:
        raise ConfigError(f"model {model.spec!r}: verl trains the weights, which an endpoint does not expose")
    spec = resolve_spec(cfg)
    sets = prepare_data(cfg)
    run_dir.mkdir(parents=True, exist_ok=True)
    inputs = _write_inputs(cfg, model, run_dir, None, sets)
    args = hydra_args(verl_overrides(cfg, spec, verl, inputs)) + list(extra or [])
    env = {"MLFLOW_TRACKING_URI": inputs.mlflow_uri, "VERL_USE_EXTERNAL_PLUGINS": "auto"}
    return VerlLaunch(
        args=args, command=[sys.executable, "-m", "verl.trainer.main_ppo", *args], env=env, inputs=inputs,
        registration="agent_loop_config_path" if inputs.agent_loop_config else "entry_point",
        not_applied=not_applied(cfg, spec), data_sha256=sets.sha256,
    )


def compose(args: list[str]) -> Any:
    """verl's trainer config with ``args`` applied, composed as ``main_ppo``'s ``@hydra.main`` does."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    config_dir = str(files("verl.trainer") / "config")
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        return hydra_compose(config_name="ppo_trainer", overrides=args)


def _check_agent_loop(config: Any) -> None:
    from omegaconf import OmegaConf
    from verl.experimental.agent_loop.agent_loop import _agent_loop_registry
    from verl.utils.import_utils import resolve_config_path

    name = config.actor_rollout_ref.rollout.agent.default_agent_loop
    path = config.actor_rollout_ref.rollout.agent.agent_loop_config_path
    entries: Any = OmegaConf.to_container(OmegaConf.load(resolve_config_path(path))) if path else []
    registered = {**_agent_loop_registry, **{e["name"]: e for e in entries}}
    if name not in registered:
        raise ValueError(f"agent loop {name!r} is not registered; registered: {sorted(registered)}")


def _deferred_lora_check(config: Any) -> tuple[Any, list[str]]:
    """The config ``validate_config`` can check here, and the checks left to the run. verl checks a LoRA
    rank against vLLM's own ranks by importing vllm; where vllm is not installed (a CPU machine's dry run)
    that one check runs when verl starts, and the rest runs on a copy without LoRA."""
    import importlib.util

    from omegaconf import OmegaConf

    model = config.actor_rollout_ref.model
    rank = model.get("lora", {}).get("rank", 0) or model.get("lora_rank", 0)
    if rank <= 0 or config.actor_rollout_ref.rollout.name != "vllm" or importlib.util.find_spec("vllm"):
        return config, []
    checked = OmegaConf.create(OmegaConf.to_container(config))
    checked.actor_rollout_ref.model.lora_rank = 0
    if "lora" in checked.actor_rollout_ref.model:
        checked.actor_rollout_ref.model.lora.rank = 0
    return checked, [f"actor_rollout_ref.model.lora_rank={rank} against vLLM's LoRA ranks (vllm is not "
                     "installed here; verl checks it when the run starts)"]


def validate(config: Any) -> dict[str, Any]:
    """Run verl's own pre-launch checks on a composed config; returns a few facts they established and
    ``deferred_checks``, those this machine cannot run (``_deferred_lora_check``). verl's checks print
    progress to stdout; it is kept off ours (the last stdout line is the result)."""
    from verl.trainer.ppo.utils import create_rl_dataset, need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config
    from verl.utils.device import auto_set_device
    from verl.workers.config import HFModelConfig

    with contextlib.redirect_stdout(io.StringIO()):
        auto_set_device(config)
        use_ref, use_critic = need_reference_policy(config), need_critic(config)
        checkable, deferred = _deferred_lora_check(config)
        validate_config(config=checkable, use_reference_policy=use_ref, use_critic=use_critic)
        omega_conf_to_dataclass(config.algorithm)  # as the workers build them: from `_target_`
        omega_conf_to_dataclass(config.actor_rollout_ref.rollout)
        model: HFModelConfig = omega_conf_to_dataclass(config.actor_rollout_ref.model)
        _check_agent_loop(config)
        train = create_rl_dataset(config.data.train_files, config.data, model.tokenizer, model.processor)
        val = create_rl_dataset(config.data.val_files, config.data, model.tokenizer, model.processor,
                                is_train=False)
    if len(train) < config.data.train_batch_size:
        raise ValueError(f"{len(train)} training prompts fit data.max_prompt_length, fewer than "
                         f"data.train_batch_size={config.data.train_batch_size}")
    return {"train_prompts": len(train), "val_prompts": len(val), "reference_policy": use_ref,
            "critic": use_critic, "gpus": config.trainer.nnodes * config.trainer.n_gpus_per_node,
            "deferred_checks": deferred}


def launch(run: VerlLaunch) -> int:
    """Run verl's trainer with its output streaming through; returns its exit code."""
    env = {**os.environ, **run.env}
    return subprocess.run(run.command, env=env, check=False).returncode
