"""What a run starts from: the algorithm's spec, the device, the problems, the base model and the engine
over it, the run directory's recorded config, the checkpoint to resume, and a config adjusted from
arguments (``configure``)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import torch
from pydantic import ValidationError
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel

from coding_framework.config.loader import ConfigError
from coding_framework.config.training import TrainingConfig
from coding_framework.llm.base import EngineError
from coding_framework.llm.local import LocalEngine, resolve_device
from coding_framework.models import ResolvedModel, resolve_model
from coding_framework.problems import (
    Problem,
    ProblemLoadError,
    builtin_problems,
    load_problem_records,
    reserved_split,
    synthetic_split,
)
from coding_framework.training.algos.algorithms import AlgorithmSpec, get_algorithm
from coding_framework.training.run.checkpoint import Checkpoint, CheckpointManager

__all__ = [
    "CONFIG_FILE",
    "check_adapters",
    "check_precision",
    "check_run_dir",
    "configure",
    "load_engine",
    "resolve_spec",
    "resume_point",
    "split_problems",
    "starting_model",
    "trained_model",
    "training_device",
]

CONFIG_FILE = "config.json"


def resolve_spec(config: TrainingConfig) -> AlgorithmSpec:
    """The registry's spec for ``config.algorithm`` with ``algo.overrides`` applied, or a ConfigError
    saying which value the spec rejects (the names were checked when the config loaded)."""
    try:
        return get_algorithm(config.algorithm, **config.algo.overrides.replaced())
    except ValueError as exc:
        raise ConfigError(f"algorithm / algo.overrides: {exc}") from None


def training_device(config: TrainingConfig) -> torch.device:
    """``device: auto`` is CUDA when torch sees a GPU, else CPU; ``cuda`` without one is a ConfigError."""
    try:
        device = resolve_device(config.device)
    except EngineError:
        raise ConfigError(
            "device: cuda, but torch sees no CUDA device; set device: auto or cpu, or install a CUDA "
            "build of torch"
        ) from None
    check_precision(config, device)
    return device


def check_precision(config: TrainingConfig, device: torch.device) -> None:
    """bf16 and gradient checkpointing are CUDA settings (``device: auto`` resolved to the CPU refuses)."""
    optim = config.optim
    if device.type != "cuda" and (optim.precision == "bf16" or optim.gradient_checkpointing):
        raise ConfigError(
            f"optim.precision: {optim.precision} / optim.gradient_checkpointing: "
            f"{str(optim.gradient_checkpointing).lower()} need a CUDA device, and this run trains on "
            f"{device.type}: on the CPU they save no memory that matters and bf16 only adds rounding"
        )


def split_problems(config: TrainingConfig) -> tuple[list[Problem], list[Problem]]:
    """(train, held-out): the synthetic split (optionally some families) plus, optionally, the built-ins."""
    data = config.data
    if data.train_constants == "reserved":
        train, heldout = reserved_split(
            data.synthetic_per_family,
            data.heldout_fraction,
            data.split_seed,
            data.reserved_train_share,
            data.train_instance_seed,
        )
    else:
        train, heldout = synthetic_split(data.synthetic_per_family, data.heldout_fraction, data.split_seed)
        if data.train_instance_seed is not None:
            train = synthetic_split(
                data.synthetic_per_family, data.heldout_fraction, data.split_seed, data.train_instance_seed
            )[0]
    if data.families is not None:
        known = {p.tags[0] for p in train}
        unknown = sorted(set(data.families) - known)
        if unknown:
            raise ConfigError(f"data.families: unknown families {unknown}; valid families: {sorted(known)}")
        train = [p for p in train if p.tags[0] in data.families]
        heldout = [p for p in heldout if p.tags[0] in data.families]
    if data.include_builtin:
        train = [*builtin_problems(), *train]
    if data.pass_rates is not None:
        train = with_stored_pass_rates(train, data.pass_rates)
    return train, heldout[: data.heldout_limit] if data.heldout_limit else heldout


def with_stored_pass_rates(problems: list[Problem], path: Path) -> list[Problem]:
    """``problems`` with the pass rates that the ranked problem records at ``path`` store for their ids."""
    try:
        ranked = {p.task_id: p for p in load_problem_records(path) if p.pass_rate is not None}
    except ProblemLoadError as exc:
        raise ConfigError(f"data.pass_rates: {exc}") from None
    unmatched = sorted(set(ranked) - {p.task_id for p in problems})
    if unmatched:
        sources = sorted({ranked[t].pass_rate_source or "an unnamed model" for t in unmatched})
        raise ConfigError(
            f"data.pass_rates: {len(unmatched)} of the {len(ranked)} ranked problems in {path} match no "
            f"training problem (e.g. {unmatched[0]!r}; ranked on {', '.join(sources)}): rank the problems "
            "this run trains on"
        )
    fields = ("pass_rate", "pass_rate_source", "pass_rate_n", "solutions")  # solutions: with own passing ones
    return [
        p.model_copy(update={f: getattr(ranked[p.task_id], f) for f in fields}) if p.task_id in ranked else p
        for p in problems
    ]


def starting_model(config: TrainingConfig, progress: bool) -> ResolvedModel:
    """The model a run starts from (``config.model``), resolved to an attested directory; a one-line
    ConfigError for one that names no weights this process can train."""
    ref = config.model
    if ref.is_endpoint:
        raise ConfigError(f"model {str(ref)!r}: training updates the weights, which an endpoint does not "
                          "expose; name the model's directory or registry version")
    if ref.engine not in (None, "local"):
        raise ConfigError(f"model {str(ref)!r}: the trainer runs the policy in its own process; drop the "
                          f"{ref.engine}: prefix")
    try:
        return resolve_model(ref, embedded=config.embedded, progress=progress)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def check_adapters(model: ResolvedModel, config: TrainingConfig) -> bool:
    """Whether the run continues ``model``'s role adapters: True when it holds the ones ``config.policies``
    trains (same names, rank, alpha and targets), False when it holds none; a ConfigError otherwise, since
    training over them as if they were absent would silently drop them."""
    found = model.policies
    if found is None:
        return False
    wanted = config.policies
    same = (
        found.adapter_names() == sorted(wanted.adapter_names())
        and (found.rank, found.alpha) == (wanted.rank, wanted.alpha)
        and sorted(found.target_modules) == sorted(wanted.target_modules)
    )
    if not same or not wanted.uses_adapters:
        held = ", ".join(a.name for a in model.adapters)
        raise ConfigError(
            f"model {model.spec!r} holds LoRA adapters ({held}; {found.mode}, rank {found.rank}, alpha "
            f"{found.alpha}); policies ({wanted.mode}, rank {wanted.rank}, alpha {wanted.alpha}) would not "
            f"continue them: set policies to mode {found.mode} with the same roles, rank and alpha, or "
            "start from the base model"
        )
    return True


def load_engine(model_dir: Path, device: torch.device, config: TrainingConfig) -> LocalEngine:
    """A LocalEngine over the model in ``model_dir``, loaded in float32 on ``device``, at policy version 0."""
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    return LocalEngine(model, tokenizer, device=device, policy_version="0",
                       max_batch_size=config.rollout.max_batch_size)


def trained_model(engine: LocalEngine, config: TrainingConfig) -> PreTrainedModel:
    """The engine's model, which the trainer updates in place and saves: a transformers model on the
    configured device (any device when ``device: auto``)."""
    model = getattr(engine, "model", None)
    if not isinstance(model, PreTrainedModel):
        raise TypeError(
            f"the engine's model is a {type(model).__name__}; the trainer updates and saves a "
            "transformers PreTrainedModel in place: pass a LocalEngine over one"
        )
    if config.device != "auto" and engine.device.type != config.device:
        raise ConfigError(
            f"device: {config.device}, but the engine passed to the trainer runs on {engine.device}; "
            "set device: auto (or the engine's device)"
        )
    return model


def _saved_config(saved: Path) -> TrainingConfig | None:
    """The config ``saved`` holds (fields added since it was written take defaults); None where it is not
    JSON or no longer a valid config."""
    try:
        return TrainingConfig.model_validate(json.loads(saved.read_text()))
    except ValueError:
        return None


def _extends(started: TrainingConfig, config: TrainingConfig) -> bool:
    """Whether ``config`` is the run's ``started`` config with more steps, where nothing but the step count
    depends on it: a constant learning rate after warmup and a fixed rollout temperature."""
    return (config.steps > started.steps and config.optim.schedule == "constant"
            and config.rollout.temperature_end is None
            and started == config.model_copy(update={"steps": started.steps}))


def check_run_dir(run_dir: Path, config: TrainingConfig, resume: bool) -> None:
    """Write ``config`` to ``run_dir``'s ``CONFIG_FILE``; a ConfigError where a resume names a different
    config than the run started with, or a fresh run would train into a directory holding checkpoints.
    A resume may raise ``steps`` (train longer) where nothing else depends on it (``_extends``)."""
    saved = run_dir / CONFIG_FILE
    current = config.model_dump(mode="json")
    if resume and saved.is_file():
        started = _saved_config(saved)
        if started is None or (started != config and not _extends(started, config)):
            raise ConfigError(
                f"{run_dir} was started with a different configuration ({saved}); resume it with the "
                "same config and seed (`steps` may only grow, under a constant learning rate and "
                "temperature), or train into a new --run-dir"
            )
    if not resume and (run_dir / "checkpoints").is_dir() and any((run_dir / "checkpoints").iterdir()):
        raise ConfigError(
            f"{run_dir} already holds checkpoints: pass --resume to continue that run, or "
            "choose a new --run-dir"
        )
    saved.write_text(json.dumps(current, indent=2) + "\n")


def resume_point(checkpoints: CheckpointManager) -> Checkpoint | None:
    """The newest checkpoint that verifies. Each rejected one (its directory, the file at fault and why)
    and the step the run goes on from are written to stderr whatever the log level: a broken newest
    checkpoint means that steps are trained again, which the user must learn."""
    ckpt, rejected = checkpoints.latest_and_rejected()
    for r in rejected:
        _notice(f"resume: rejected checkpoint {r.path}: {os.path.relpath(r.file, r.path)}: {r.reason}")
    if ckpt is not None:
        _notice(f"resume: continuing from step {ckpt.step} ({ckpt.path})")
    else:
        found = "no checkpoint verifies" if rejected else "no checkpoint"
        _notice(f"resume: {found} in {checkpoints.root}; starting from step 0")
    return ckpt


def _notice(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def configure(
    base: TrainingConfig,
    *,
    algorithm: str | None = None,
    episodes: int | None = None,
    seed: int | None = None,
    device: str | None = None,
) -> TrainingConfig:
    """``base`` with the algorithm, seed, device and, from an episode budget, the number of steps
    replaced; a value the config rejects is a ConfigError naming the field."""
    given = {"algorithm": algorithm, "seed": seed, "device": device}
    update: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
    if episodes is not None:
        if episodes < 1:
            raise ConfigError(f"episodes must be at least 1, got {episodes}")
        per_step = base.rollout.problems_per_step * base.rollout.group_size
        update["steps"] = -(-episodes // per_step)
    try:
        return TrainingConfig.model_validate({**base.model_dump(), **update})
    except ValidationError as exc:
        problems = (f"{'.'.join(str(p) for p in e['loc']) or 'config'}: {e['msg']}" for e in exc.errors())
        raise ConfigError("; ".join(problems)) from None
