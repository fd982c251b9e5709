"""`coding-framework verl-train` and `verl-export`: train on verl's FSDP trainer (Ray), export checkpoints.

`verl-train` composes verl's config from ours and validates it with verl's own checks; `--dry-run` stops
there. `verl-export` merges a verl FSDP checkpoint into a Hugging Face directory and registers it in MLflow.
See docs/scale_out.md for the multi-node and GPU paths.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any, get_args

import typer

from coding_framework.cli.app import app
from coding_framework.cli.output import fail, print_result_line
from coding_framework.config.algorithm import ALGORITHM_NAMES
from coding_framework.config.verl import CPU_REPOSITORY_LENGTHS, RolloutEngine

_REPO_LENGTH = CPU_REPOSITORY_LENGTHS["rollout.response_length"]


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    lines = [line.strip().removeprefix("- ") for line in text.splitlines() if line.strip()]
    return "; ".join(lines).replace(":; ", ": ")


def _bad_input() -> tuple[type[BaseException], ...]:
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from coding_framework.config import ConfigError

    # verl's own checks raise AssertionError / ValueError; hydra and OmegaConf their own errors.
    return (ConfigError, HydraException, OmegaConfBaseException, AssertionError, ValueError, OSError)


def _data_overrides(train_data: list[str] | None, heldout_data: str | None) -> dict[str, Any]:
    """``--train-data`` / ``--heldout-data`` as config overrides: problem sources set ``data.train`` /
    ``data.heldout``; repository benchmarks (``minirepo:SPLIT``, ``swebench:FILE``) set
    ``data.repository.train`` / ``.heldout``, which makes the run one on repository tasks."""
    from coding_framework.evaluation.repository import is_repository_benchmark

    sources = list(train_data or [])
    kinds = {is_repository_benchmark(s) for s in sources}
    if len(kinds) > 1:
        raise ValueError(f"--train-data mixes repository benchmarks and problem sources "
                         f"({', '.join(sources)}); a run trains on one kind")
    repository = kinds == {True} or (heldout_data is not None and is_repository_benchmark(heldout_data))
    prefix = "data.repository" if repository else "data"
    return {f"{prefix}.train": sources or None, f"{prefix}.heldout": heldout_data}


def _configs(config: str | None, verl_config: str | None, data: dict[str, Any], algorithm: str | None,
             verl_fields: dict[str, Any]) -> tuple[Any, Any]:
    from coding_framework.config import load_config
    from coding_framework.config.training import TrainingConfig
    from coding_framework.config.verl import VerlConfig

    cfg = load_config(TrainingConfig, config, overrides={"algorithm": algorithm, **data})
    default = "verl_fsdp_cpu" if cfg.device == "cpu" else "verl_fsdp"
    if verl_config is None and cfg.device == "cpu" and cfg.data.repository is not None:
        # tool turns need longer conversations than verl_fsdp_cpu's problem-sized ones
        verl_fields = {**CPU_REPOSITORY_LENGTHS, **{k: v for k, v in verl_fields.items() if v is not None}}
    return cfg, load_config(VerlConfig, verl_config or default, overrides=verl_fields)


@app.command("verl-train")
def verl_train(
    run_dir: Annotated[
        Path, typer.Option(help="Data, workflow YAMLs, checkpoints and MLflow store go here.")],
    model: Annotated[str | None, typer.Option(
        help="The starting model: embedded | DIR | local:DIR | models:/NAME/VERSION | models:/NAME@ALIAS "
             "(downloaded); a shared_lora model's adapter continues (default: the config's model).")] = None,
    config: Annotated[
        str | None, typer.Option(help="Training YAML (path or shipped name, e.g. grpo_basic).")] = None,
    verl_config: Annotated[
        str | None, typer.Option(help="verl YAML: FSDP, rollout, cluster (default: shipped verl_fsdp).")
    ] = None,
    algorithm: Annotated[
        str | None, typer.Option(help=f"{' | '.join(ALGORITHM_NAMES)} (default: the config's).")] = None,
    override: Annotated[
        list[str] | None, typer.Option(help="A verl hydra override KEY=VALUE (repeatable; wins).")] = None,
    nnodes: Annotated[int | None, typer.Option(min=1, help="Nodes (default: the verl config's).")] = None,
    gpus_per_node: Annotated[int | None, typer.Option(min=1, help="GPUs per node.")] = None,
    ray_address: Annotated[str | None, typer.Option(help="Join this Ray cluster (e.g. auto).")] = None,
    dry_run: Annotated[bool, typer.Option(help="Compose and validate only; do not launch.")] = False,
    resume: Annotated[bool, typer.Option(
        help="Continue from the newest verl checkpoint in --run-dir (else a run dir with checkpoints is "
             "refused).")] = False,
    train_data: Annotated[list[str] | None, typer.Option(
        help="A training source (repeatable): NAME, NAME:SPLIT or a .jsonl; replaces data.train. Repository "
             "benchmarks (minirepo:train, swebench:FILE) train on repository tasks instead "
             "(data.repository.train).")] = None,
    heldout_data: Annotated[str | None, typer.Option(
        help="The held-out source (data.heldout; a repository benchmark: data.repository.heldout).")] = None,
    prompt_length: Annotated[int | None, typer.Option(
        min=16, help="Most tokens of the first prompt (verl config rollout.prompt_length).")] = None,
    response_length: Annotated[int | None, typer.Option(
        min=16, help="Most tokens of an episode's whole multi-turn response, tool output included "
             "(rollout.response_length). A repository run on CPU without --verl-config defaults both "
             f"lengths to {_REPO_LENGTH} (the embedded model's 2048 positions, halved).")] = None,
    rollout: Annotated[str | None, typer.Option(
        help="verl's rollout engine: vllm | sglang (GPU only) (default: the verl config's).")] = None,
    max_staleness: Annotated[int | None, typer.Option(
        help="K: verl's V1 trainer, 0 its sync mode, K >= 1 its separate_async mode bounded to K + 1 model "
             "versions (the CPU path: 0 only) (default: the config's rollout.max_staleness).")] = None,
    off_policy_correction: Annotated[str | None, typer.Option(
        help="none | tis (token-level truncated IS, capped at algo.tis_cap) | mis (sequence-level geometric "
             "mask within algo.mis_bounds), as verl's algorithm.rollout_correction (default: the config's).")
    ] = None,
) -> None:
    """Compose verl's trainer config from ours, validate it with verl's checks, run verl.trainer.main_ppo
    (verl's V1 trainer; on CPU the legacy one), then export, gate and register the
    final model as `train` does. A config with `device: cpu` (e.g. verl_cpu) runs on this machine's CPU.
    A config with `data.repository` (e.g. verl_cpu_repo), or `--train-data minirepo:train`, trains the
    tool-calling agent on repository tasks (verl's agent loop `RepositoryAgentLoop`).

    With `--dry-run` the last stdout line is JSON: `command` (verl's argv), `validated`, `verl_keys` (what the
    rollout engine, staleness and correction set in verl's config), `gpu_only_checks`. After a run it is the
    run's results: `steps`, `final_model`, `weights_changed`, `audit_offending_tokens`, `challenger`, ...
    """
    from coding_framework.training.verl.launcher import compose, prepare, validate
    from coding_framework.training.verl.overrides import off_policy

    start = time.perf_counter()
    if rollout is not None and rollout not in get_args(RolloutEngine):
        fail(f"--rollout {rollout!r} is not one of {', '.join(get_args(RolloutEngine))}")
    try:
        data = {"model": model, **_data_overrides(train_data, heldout_data)}
        verl_fields = {"cluster.nnodes": nnodes, "cluster.gpus_per_node": gpus_per_node,
                       "cluster.ray_address": ray_address, "rollout.name": rollout,
                       "rollout.prompt_length": prompt_length, "rollout.response_length": response_length}
        cfg, verl = _configs(config, verl_config, data, algorithm, verl_fields)
        off = off_policy(cfg, max_staleness, off_policy_correction)
        if not dry_run:
            _train(cfg, verl, run_dir, list(override or []), off, resume)
            return
        run = prepare(cfg, verl, run_dir, list(override or []), off=off)
        checks = validate(compose(run.args, run.entry), run.entry, run.option_keys)
    except _bad_input() as exc:
        fail(_one_line(exc))
    for name in run.not_applied:
        typer.echo(f"warning: {name} is set but verl's trainer does not apply it", err=True)
    for check in checks["deferred_checks"]:
        typer.echo(f"warning: not checked here: {check}", err=True)
    for check in checks["gpu_only_checks"]:
        typer.echo(f"warning: only a GPU run checks: {check}", err=True)
    result: dict[str, Any] = {
        "command": run.command, "validated": True, "entry": run.entry.module,
        "max_staleness": run.off_policy.max_staleness, "off_policy_correction": run.off_policy.correction,
        "registration": run.registration, "not_applied": run.not_applied, **checks,
        "run_dir": str(run.inputs.run_dir),
        "checkpoints": str(run.inputs.run_dir / "checkpoints"), "mlflow_uri": run.inputs.mlflow_uri,
        "data_sha256": run.data_sha256, "train_file": str(run.inputs.train_file),
        "val_file": str(run.inputs.val_file), "validate_seconds": round(time.perf_counter() - start, 2),
    }
    print_result_line(result)


def _train(cfg: Any, verl: Any, run_dir: Path, extra: list[str], off: Any, resume: bool) -> None:
    """``run_verl`` and its results as the last stdout line (bad input: one line, exit 2)."""
    from coding_framework.training.verl.run import VerlRunError, run_verl

    try:
        results = run_verl(cfg, verl, run_dir, resume=resume, extra=extra, off=off)
    except VerlRunError as exc:
        fail(str(exc), code=1)
    step_s = [r.metrics["timing_s/step"] for r in results.history if "timing_s/step" in r.metrics]
    print_result_line({
        **results.summary(), "steps": results.steps, "final_model": str(results.final_model_dir),
        "weights_changed": bool(results.final_metrics.get("weights/changed")),
        "weights_max_abs_change": results.final_metrics.get("weights/max_abs_change"),
        "audit_checked_tokens": results.audit.get("checked_tokens"),
        "trainer_rollout_logprob_diff_max": max(
            (r.metrics["training/rollout_probs_diff_max"] for r in results.history
             if "training/rollout_probs_diff_max" in r.metrics), default=None),
        "seconds_per_step": round(sum(step_s) / len(step_s), 3) if step_s else None,
        "registered_model": results.registered_model,
    })


@app.command("verl-export")
def verl_export(
    checkpoint: Annotated[
        Path, typer.Option(help="global_step_N/actor, global_step_N or a run's checkpoints folder (newest).")
    ],
    out: Annotated[Path, typer.Option(help="The Hugging Face directory to write.")],
    register: Annotated[
        str | None, typer.Option(help="Register in MLflow under this name (alias challenger).")] = None,
    mlflow_uri: Annotated[
        str | None, typer.Option(help="MLflow tracking URI (default: sqlite beside --out).")] = None,
) -> None:
    """Merge a verl FSDP checkpoint into a Hugging Face model; the last stdout line is JSON."""
    from coding_framework.training.verl.export import merge_checkpoint, register_export

    try:
        result = merge_checkpoint(checkpoint, out)
        if register:
            result.update(register_export(result, register, mlflow_uri))
    except _bad_input() as exc:
        fail(_one_line(exc))
    print_result_line(result)
