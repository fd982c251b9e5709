"""Launch verl's PPO trainer (``verl.trainer.main_ppo``) on our training graph, after checking the config
with verl's own code.

``prepare`` resolves the starting model (``TrainingConfig.model``: a directory, the embedded model or a
registry version, downloaded; its shared LoRA adapter continues when ``policies`` matches it), writes what
the workers read into the run directory (the parquet data of ``write_verl_dataset``, the workflow and
reward YAMLs ``CodingAgentLoop`` loads; for a run on repository tasks, ``data.repository``, the rows of
``write_verl_repository_dataset`` and the ``repository`` YAML ``RepositoryAgentLoop`` loads) and builds the
overrides (``overrides.verl_overrides``) and the verl program that runs them (``overrides.verl_entry``:
``main_ppo``, which runs the V1 trainer or, on CPU, the legacy one).
``compose`` builds the config exactly as that program's main would: hydra's compose API over its config
(``verl/trainer/config/ppo_trainer.yaml`` for ``main_ppo``). ``validate`` runs the checks the program and its
``TaskRunner`` run before placing any worker: ``validate_config`` (batch sizes against GPUs, micro-batches,
the actor and critic dataclasses), the typed ``RolloutConfig``, ``AlgoConfig`` and ``HFModelConfig`` (which
loads the tokenizer), verl's ``RLHFDataset`` over our parquet (so every prompt fits ``max_prompt_length``),
that our agent loop and the rollout engine are in verl's registries, the V1 trainer built from the config
(its mode's own checks), and the rollout correction through verl's own code on a toy batch (verl parses
its thresholds only when a batch arrives). ``launch`` runs the command and streams its output.

Our agent loop reaches every Ray worker through the ``verl.plugins`` entry point (verl imports each plugin
in ``verl/__init__.py``, which every worker imports). Where the package is not installed with that entry
point (a source checkout on ``PYTHONPATH``), the run falls back to verl's ``agent_loop_config_path``, which
a repository run always sets, naming ``RepositoryAgentLoop`` (the plugin names ``CodingAgentLoop``'s module).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import subprocess
import sys
import warnings
from dataclasses import dataclass
from importlib import metadata
from importlib.resources import files
from pathlib import Path
from typing import Any

import yaml

from coding_framework.config.errors import ConfigError
from coding_framework.config.repository import RepositoryConfig
from coding_framework.config.training import TrainingConfig
from coding_framework.config.verl import VerlConfig
from coding_framework.models import ADAPTERS_DIR, ResolvedModel
from coding_framework.models.registry import run_store_uri
from coding_framework.training.rollouts.episodes import step_workflow
from coding_framework.training.run.data import TrainingData, prepare_data
from coding_framework.training.run.setup import check_adapters, resolve_spec, starting_model
from coding_framework.training.verl.agent_loop import AGENT_NAME, CodingAgentLoop, write_verl_dataset
from coding_framework.training.verl.cpu import ROLLOUT
from coding_framework.training.verl.overrides import (
    MAIN_PPO,
    OffPolicy,
    VerlEntry,
    VerlInputs,
    VerlMappingError,
    hydra_args,
    not_applied,
    off_policy_overrides,
    verl_entry,
    verl_overrides,
)
from coding_framework.training.verl.repository import (
    REPOSITORY_AGENT_NAME,
    RepositoryAgentLoop,
    write_verl_repository_dataset,
)

__all__ = ["PLUGIN_GROUP", "VerlLaunch", "check_rollout_settings", "compose", "launch", "plugin_installed",
           "prepare", "validate"]

PLUGIN_GROUP = "verl.plugins"
AGENT_LOOP_MODULE = CodingAgentLoop.__module__
_ENGINE_PACKAGES = {"vllm": "vllm", "sglang": "sglang", "trtllm": "tensorrt_llm"}


@dataclass(frozen=True)
class VerlLaunch:
    """A prepared run: the hydra overrides, the command that runs verl and the environment it needs;
    ``option_keys``: the verl keys that the rollout engine, ``max_staleness`` and the correction set."""

    args: list[str]
    command: list[str]
    env: dict[str, str]
    inputs: VerlInputs
    registration: str
    not_applied: list[str]
    data_sha256: str
    entry: VerlEntry
    off_policy: OffPolicy
    option_keys: list[str]


def plugin_installed() -> bool:
    """Whether the installed distribution declares our agent loop as a ``verl.plugins`` entry point."""
    points = metadata.entry_points(group=PLUGIN_GROUP)
    return any(ep.value.split(":")[0] == AGENT_LOOP_MODULE for ep in points)


def package_path() -> str:
    """``PYTHONPATH`` for verl's processes: the folder this package is imported from, then the caller's."""
    import coding_framework

    root = str(Path(coding_framework.__file__).resolve().parents[1])
    paths = [root, *os.environ.get("PYTHONPATH", "").split(os.pathsep)]
    return os.pathsep.join(dict.fromkeys(p for p in paths if p))


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
                  sets: TrainingData, mlflow_run_id: str | None = None) -> VerlInputs:
    """The parquet files come from the same cleaned sets as the local trainer's (``prepare_data``), and the
    manifest with their sha256 goes beside them."""
    sets.write_manifest(run_dir)
    # The Generator samples as the local trainer's rollouts do (rollout.max_new_tokens, temperature, top_p).
    workflow = step_workflow(cfg.workflow, cfg.rollout.max_new_tokens, cfg.rollout.temperature,
                             cfg.rollout.top_p)
    parts: dict[str, Any] = {"agents": workflow.agents, "graph": workflow.graph, "sandbox": workflow.sandbox,
                             "rewards": cfg.reward.function}
    if sets.repository is not None:
        parts["repository"] = workflow.repository
    files = {key: _write_yaml(run_dir / "workflow" / f"{key}.yaml", part.model_dump(mode="json"))
             for key, part in parts.items()}
    assert model.model_dir is not None
    train_file, val_file, agent = _write_data(sets, workflow.repository, model.model_dir,
                                              run_dir / "verl_data")
    loop_config = None
    if not plugin_installed() or agent != AGENT_NAME:
        # the plugin names CodingAgentLoop's module; a repository run names its own loop's class here
        loops = {AGENT_NAME: CodingAgentLoop, REPOSITORY_AGENT_NAME: RepositoryAgentLoop}
        loop_config = _write_yaml(run_dir / "workflow" / "agent_loops.yaml", [
            {"name": name, "_target_": f"{cls.__module__}.{cls.__name__}"} for name, cls in loops.items()])
    return VerlInputs(
        model_dir=model.model_dir.resolve(), run_dir=run_dir.resolve(),
        train_file=train_file, val_file=val_file, agent_loop=agent,
        workflow_files=files, agent_loop_config=loop_config,
        mlflow_uri=mlflow_uri or cfg.tracking.mlflow_uri or run_store_uri(run_dir),
        adapter_dir=adapter_dir(model, cfg), pythonpath=package_path() if cfg.device == "cpu" else None,
        mlflow_run_id=mlflow_run_id,
    )


def _write_data(sets: TrainingData, repository: RepositoryConfig, model_dir: Path,
                data: Path) -> tuple[Path, Path, str]:
    """The train and val parquet files and the agent loop their rows name: problems for
    ``CodingAgentLoop``, or repository tasks (``sets.repository``) for ``RepositoryAgentLoop``, whose
    prompts are the agent's opening messages in the tool format it will use with this model."""
    if sets.repository is None:
        return (write_verl_dataset(sets.train, data / "train.parquet", "train", sets.sha256).resolve(),
                write_verl_dataset(sets.heldout, data / "val.parquet", "val", sets.sha256).resolve(),
                AGENT_NAME)
    from transformers import AutoTokenizer

    from coding_framework.agents.tool_calls import format_for

    fmt = repository.tool_format if repository.tool_format != "auto" else \
        format_for(AutoTokenizer.from_pretrained(model_dir))
    tasks = sets.repository
    return (write_verl_repository_dataset(tasks.train, data / "train.parquet", repository, fmt, "train",
                                          sets.sha256).resolve(),
            write_verl_repository_dataset(tasks.heldout, data / "val.parquet", repository, fmt, "val",
                                          sets.sha256).resolve(), REPOSITORY_AGENT_NAME)


def prepare(cfg: TrainingConfig, verl: VerlConfig, run_dir: Path, extra: list[str] | None = None, *,
            model: ResolvedModel | None = None, off: OffPolicy | None = None,
            mlflow_run_id: str | None = None) -> VerlLaunch:
    """Write the run's inputs and build the command; ``extra`` are the user's overrides (they win).
    ``model``: ``cfg.model`` already resolved (else resolved here; an endpoint is a ConfigError).
    ``off``: the staleness and correction (default: synchronous, none). verl continues from the newest
    checkpoint in the run directory (``resume_mode=auto``); ``mlflow_run_id``: the MLflow run verl logs
    into."""
    off = off or OffPolicy()
    entry = verl_entry(off)
    option_keys = ["actor_rollout_ref.rollout.name", *off_policy_overrides(off, verl, cfg.algo.minibatches)]
    model = model or starting_model(cfg, progress=False)
    if model.model_dir is None:
        raise ConfigError(f"model {model.spec!r}: verl trains the weights, which an endpoint does not expose")
    if cfg.data.guidance is not None:
        raise ConfigError("data.guidance is the local trainer's (`train`): verl's agent loop gives no answer "
                          "prefix, so the guided problems would train unguided; drop it for `verl-train`")
    spec = resolve_spec(cfg)
    sets = prepare_data(cfg)
    run_dir.mkdir(parents=True, exist_ok=True)
    inputs = _write_inputs(cfg, model, run_dir, None, sets, mlflow_run_id)
    # verl's @hydra.main writes its outputs/ folder into the current directory unless told: the run's own.
    own = [*entry.args, f"hydra.run.dir={inputs.run_dir / 'hydra'}"]
    args = [*own, *hydra_args(verl_overrides(cfg, spec, verl, inputs, off)), *(extra or [])]
    env = {"MLFLOW_TRACKING_URI": inputs.mlflow_uri, "VERL_USE_EXTERNAL_PLUGINS": "auto"}
    if cfg.device == "cpu":
        from coding_framework.training.verl.cpu import device_env

        env.update({**device_env(), "PYTHONPATH": inputs.pythonpath or ""})
    if mlflow_run_id:
        env["MLFLOW_RUN_ID"] = mlflow_run_id
    return VerlLaunch(
        args=args, command=[sys.executable, "-m", entry.module, *args], env=env, inputs=inputs,
        registration="agent_loop_config_path" if inputs.agent_loop_config else "entry_point",
        not_applied=not_applied(cfg, spec), data_sha256=sets.sha256, entry=entry, off_policy=off,
        option_keys=option_keys,
    )


def compose(args: list[str], entry: VerlEntry = MAIN_PPO) -> Any:
    """verl's trainer config with ``args`` applied, composed as ``entry``'s ``@hydra.main`` does, and as its
    main then amends it."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    config_dir = str(files(entry.config_package) / "config")
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=config_dir, version_base=None):
        config = hydra_compose(config_name=entry.config_name, overrides=args)
    return config


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


def _check_rollout_engine(config: Any) -> None:
    """The engine is one of verl's rollout replicas (by name: importing one needs its engine installed)."""
    from verl.workers.rollout.replica import RolloutReplicaRegistry

    name = config.actor_rollout_ref.rollout.name
    if name not in RolloutReplicaRegistry._registry:
        raise ValueError(f"actor_rollout_ref.rollout.name {name!r} is not one of verl's rollout engines "
                         f"{sorted(RolloutReplicaRegistry._registry)}")


def _check_rollout_correction(config: Any) -> None:
    """``algorithm.rollout_correction`` as verl's typed ``RolloutCorrectionConfig``, then through the call the
    trainer makes on every batch, on a two-token batch: verl checks its modes and thresholds only there."""
    import torch
    from verl import DataProto
    from verl.trainer.config.algorithm import RolloutCorrectionConfig
    from verl.trainer.ppo.rollout_corr_helper import compute_rollout_correction_and_add_to_batch
    from verl.utils.config import omega_conf_to_dataclass

    correction = config.algorithm.get("rollout_correction")
    if correction is None:
        return
    omega_conf_to_dataclass(correction, RolloutCorrectionConfig)
    logprobs = torch.zeros(1, 2)
    batch = DataProto.from_dict(tensors={"old_log_probs": logprobs, "rollout_log_probs": logprobs,
                                         "response_mask": torch.ones(1, 2)})
    compute_rollout_correction_and_add_to_batch(batch, correction)


def _check_v1_trainer(config: Any) -> list[str]:
    """The V1 trainer built from the config as its ``TaskRunnerV1`` builds it (``get_trainer_cls(mode)``;
    its constructor runs the mode's own checks and builds the replay buffer that bounds staleness), without
    placing anything; returns the checks left to the run where TransferQueue, which V1 imports, is missing."""
    if not config.trainer.get("use_v1", False):
        return []
    if importlib.util.find_spec("transfer_queue") is None:
        return ["verl's V1 trainer built from this config (transferqueue is not installed here: "
                "pip install 'coding-framework[verl-v1]')"]
    from omegaconf import OmegaConf

    with warnings.catch_warnings():  # verl's engine registry warns about each engine package it lacks
        warnings.simplefilter("ignore", UserWarning)
        from verl.trainer.ppo.v1 import get_trainer_cls

    copy: Any = OmegaConf.create(OmegaConf.to_container(config))  # the trainer keeps and may amend it
    get_trainer_cls(config.trainer.v1.trainer_mode)(copy)
    return []


def _gpu_only_checks(config: Any, entry: VerlEntry) -> list[str]:
    rollout, model = config.actor_rollout_ref.rollout, config.actor_rollout_ref.model
    name = rollout.name
    checks = []
    package = _ENGINE_PACKAGES.get(name, name)
    if name != ROLLOUT and importlib.util.find_spec(package) is None:
        checks.append(f"the {name} rollout: verl's {name} replica starts, takes these rollout settings "
                      "and returns the per-token logprobs the agent loop records "
                      f"({package} is not installed here)")
    # the token server merges an adapter of any rank into its weights (``lora``): nothing to check
    rank = model.get("lora", {}).get("rank", 0) or model.get("lora_rank", 0)
    if name not in ("vllm", ROLLOUT) and rank > 0:
        checks.append(f"the LoRA rank against {name}'s limits (verl checks LoRA ranks against vLLM only)")
    if config.trainer.get("use_v1", False) and config.trainer.v1.trainer_mode != "sync":
        checks.append(f"verl's V1 {config.trainer.v1.trainer_mode} trainer on "
                      f"{config.trainer.n_gpus_per_node} trainer and {rollout.n_gpus_per_node} rollout GPUs "
                      f"per node, and its weight sync to the rollout ({rollout.checkpoint_engine.backend})")
    correction = config.algorithm.get("rollout_correction")
    if correction is not None and (correction.rollout_is or correction.rollout_rs):
        checks.append("algorithm.rollout_correction on the engines' real logprobs (the rollout_corr/* "
                      "metrics, what it weights and masks); here it ran on a toy batch")
    return checks


def check_rollout_settings(config: Any, entry: VerlEntry = MAIN_PPO) -> list[str]:
    """verl's checks of the rollout engine, the rollout correction and the V1 trainer; returns what only a
    GPU run can check: the engine where it is not installed here, the async trainer's placement and weight
    sync, the correction on real logprobs (and the V1 trainer where TransferQueue is missing)."""
    _check_rollout_engine(config)
    _check_rollout_correction(config)
    return [*_check_v1_trainer(config), *_gpu_only_checks(config, entry)]


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


def validate(config: Any, entry: VerlEntry = MAIN_PPO, keys: list[str] | None = None) -> dict[str, Any]:
    """Run verl's own pre-launch checks on a config composed for ``entry``; returns a few facts they
    established, ``deferred_checks`` (verl checks this machine cannot run: ``_deferred_lora_check``),
    ``gpu_only_checks`` and ``verl_keys``, the values verl resolved for ``keys``. verl's checks print
    progress to stdout; it is kept off ours (the last stdout line is the result)."""
    from omegaconf import OmegaConf
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
        gpu_only = check_rollout_settings(config, entry)
        train = create_rl_dataset(config.data.train_files, config.data, model.tokenizer, model.processor)
        val = create_rl_dataset(config.data.val_files, config.data, model.tokenizer, model.processor,
                                is_train=False)
    if len(train) < config.data.train_batch_size:
        raise ValueError(f"{len(train)} training prompts fit data.max_prompt_length, fewer than "
                         f"data.train_batch_size={config.data.train_batch_size}")
    gpus = config.trainer.nnodes * config.trainer.n_gpus_per_node
    if not config.actor_rollout_ref.get("hybrid_engine", True):  # the async rollout's GPUs of its own
        gpus += config.actor_rollout_ref.rollout.nnodes * config.actor_rollout_ref.rollout.n_gpus_per_node
    return {"train_prompts": len(train), "val_prompts": len(val), "reference_policy": use_ref,
            "critic": use_critic, "gpus": gpus,
            "deferred_checks": deferred, "gpu_only_checks": gpu_only,
            "verl_keys": {key: OmegaConf.select(config, key.lstrip("+")) for key in keys or []}}


def launch(run: VerlLaunch, stdout: Any = None) -> int:
    """Run verl's trainer with its output streaming through (``stdout``: where its stdout goes, e.g.
    ``sys.stderr`` so that the caller's stdout stays its own); returns its exit code."""
    env = {**os.environ, **run.env}
    return subprocess.run(run.command, env=env, check=False, stdout=stdout).returncode
