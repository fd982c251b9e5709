"""A whole training run on verl's trainer, from config to registered model, as the local trainer runs one.

``run_verl`` prepares and validates the run (``launcher``), opens the run's MLflow run (the same store and
run-id record as the local trainer, ``tracking.Trackers``) and starts verl's trainer as a subprocess logging
into it (``MLFLOW_RUN_ID``: verl's tracker attaches to a given run). verl checkpoints every
``checkpoint.every`` steps into ``<run_dir>/checkpoints``; ``resume`` continues from the newest one there
(verl's ``resume_mode=auto``), and without it a run directory that holds checkpoints is refused, as
``train`` refuses it. When verl is done:

1. the newest checkpoint becomes ``final_model`` at training precision (``export.save_full_precision``);
2. ``weights_changed``: whether it differs from the starting model;
3. the audit's totals: on CPU every training batch is teacher-forced through the weights that generated it
   (``cpu_rollout.AuditingAgentLoopManager`` writes ``audit.jsonl``; a step trained again after a resume
   counts once, its last record); on repository tasks each step's episode figures there
   (``rollout/resolved_rate``, ``rollout/infra_masked``, ``tools/<name>``, ...) are logged at their step;
4. the held-out set (and ``eval.benchmarks``) before and after, greedy as configured, through the local
   engine (repository tasks: through the repository graph, resolved rate as pass@1), and the regression gate
   on them (``gate.gate_verdict``, the local trainer's);
5. the final model logged and registered as the local trainer registers its own (``challenger`` only when
   the gate passed), and the run's ``TrainingResults`` written to ``results.json``.

The history is verl's per-step metrics as MLflow holds them (``critic/score/mean``, ``actor/grad_norm``,
``timing_s/step``, ...).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from coding_framework.config.errors import ConfigError
from coding_framework.config.training import TrainingConfig
from coding_framework.config.verl import VerlConfig
from coding_framework.models import ResolvedModel
from coding_framework.training.run.data import TrainingData
from coding_framework.training.run.gate import GateResult, gate_verdict
from coding_framework.training.run.heldout import HeldoutResult
from coding_framework.training.run.results import StepRecord, TrainingResults
from coding_framework.training.verl.launcher import VerlLaunch, compose, launch, prepare, validate
from coding_framework.training.verl.overrides import AUDIT_FILE, OffPolicy

__all__ = ["VerlRunError", "audit_totals", "rollout_history", "run_verl", "step_history", "weights_changed"]

FINAL_MODEL = "final_model"  # the local trainer's name for it (``trainer.FINAL_MODEL``)
CONFIG_FILE = "config.json"


class VerlRunError(RuntimeError):
    """verl's trainer failed (its exit code and where its output went are in the message)."""


def _check_run_dir(cfg: TrainingConfig, run_dir: Path, resume: bool) -> None:
    ckpts = run_dir / "checkpoints"
    saved = run_dir / CONFIG_FILE
    if not resume and ckpts.is_dir() and any(ckpts.iterdir()):
        raise ConfigError(f"{run_dir} already holds checkpoints: pass --resume to continue that run, or "
                          "choose a new --run-dir")
    if resume and saved.is_file() and TrainingConfig.model_validate(json.loads(saved.read_text())) != cfg:
        raise ConfigError(f"{run_dir} was started with a different configuration ({saved}); resume it with "
                          "the same config, or train into a new --run-dir")
    run_dir.mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps(cfg.model_dump(mode="json"), indent=2) + "\n")


def audit_totals(path: Path) -> dict[str, float]:
    """The audit's totals over ``audit.jsonl`` (the last record of each step), as the local trainer's
    ``audit`` dict; empty where nothing was audited (verl's own rollout on a GPU)."""
    if not path.is_file():
        return {}
    steps = {r["step"]: r for r in map(json.loads, path.read_text().splitlines()) if r}
    return {"trajectories": float(sum(r["rows"] for r in steps.values())),
            "checked_tokens": float(sum(r["checked_tokens"] for r in steps.values())),
            "offending_tokens": float(sum(r["offending_tokens"] for r in steps.values())),
            "audited_steps": float(len(steps))}


def rollout_history(path: Path) -> dict[int, dict[str, float]]:
    """The per-step figures of repository episodes the CPU rollout wrote into ``audit.jsonl`` (``rollout``:
    resolved rate, turns, tool calls, rows left out by infrastructure failures), by step; the last record
    of a step wins, as in ``audit_totals``."""
    if not path.is_file():
        return {}
    records = [r for r in map(json.loads, path.read_text().splitlines()) if r and "rollout" in r]
    return {int(r["step"]): dict(r["rollout"]) for r in records}


def weights_changed(start: Path, final: Path) -> tuple[bool, float]:
    """Whether any weight of ``final`` differs from ``start``'s (same names), and the largest change."""
    from safetensors.torch import load_file

    def weights(directory: Path) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in sorted(directory.glob("*.safetensors")):
            out.update(load_file(f))
        return out

    before, after = weights(start), weights(final)
    shared = sorted(set(before) & set(after))
    if not shared:
        raise ValueError(f"{start} and {final} share no weight names")
    largest = max(float((after[k].float() - before[k].float()).abs().max()) for k in shared)
    return largest > 0, largest


def step_history(client: Any, run_id: str) -> list[StepRecord]:
    """verl's per-step metrics in the MLflow run (system metrics and step 0's validation left out)."""
    keys = [k for k in client.get_run(run_id).data.metrics if not k.startswith("system/")]
    steps: dict[int, dict[str, float]] = {}
    for key in keys:
        for m in client.get_metric_history(run_id, key):
            if m.step > 0:
                steps.setdefault(m.step, {})[key] = m.value
    return [StepRecord(step=s, metrics=steps[s]) for s in sorted(steps)]


def _evaluate(cfg: TrainingConfig, model_dir: Path, sets: TrainingData,
              grader: Any) -> tuple[HeldoutResult, dict[str, HeldoutResult]]:
    """The held-out set (problems, or repository tasks through the repository graph) and the slices."""
    from coding_framework.llm.local import LocalEngine
    from coding_framework.training.run.evals import (
        evaluate_policy,
        evaluate_repository_policy,
        evaluate_slices,
    )

    engine = LocalEngine.from_pretrained(model_dir, device="cpu" if cfg.device == "cpu" else "auto",
                                         max_batch_size=cfg.rollout.max_batch_size)
    try:
        if sets.repository is not None:
            result = asyncio.run(evaluate_repository_policy(engine, cfg, grader, sets.repository.heldout))
        else:
            result = asyncio.run(evaluate_policy(engine, cfg, grader, sets.heldout))
        return result, asyncio.run(evaluate_slices(engine, cfg, grader, sets.slices))
    finally:
        engine.close()


def _gate(cfg: TrainingConfig, start: Path, final: Path) -> tuple[HeldoutResult, HeldoutResult, GateResult]:
    from coding_framework.grading import Grader
    from coding_framework.training.run.data import prepare_data

    sets = prepare_data(cfg)
    with Grader(cfg.workflow.sandbox) as grader:
        before, before_slices = _evaluate(cfg, start, sets, grader)
        after, after_slices = _evaluate(cfg, final, sets, grader)
    return before, after, gate_verdict(cfg.gate, before, before_slices, after, after_slices)


def run_verl(cfg: TrainingConfig, verl: VerlConfig, run_dir: Path, *, resume: bool = False,
             extra: list[str] | None = None, off: OffPolicy | None = None,
             model: ResolvedModel | None = None) -> TrainingResults:
    """Train ``cfg`` on verl's trainer (see the module docstring); ``extra``: verl hydra overrides (they
    win). Bad input raises ConfigError (or verl's own validation error); verl failing, VerlRunError."""
    from coding_framework.training.run.setup import starting_model
    from coding_framework.training.run.tracking import Trackers

    began = time.perf_counter()
    _check_run_dir(cfg, run_dir, resume)
    start = model or starting_model(cfg, progress=False)
    trackers = Trackers(cfg.tracking, run_dir, resume=resume)
    status = "FAILED"
    try:
        run = prepare(cfg, verl, run_dir, extra, model=start, off=off, mlflow_run_id=trackers.run_id)
        validate(compose(run.args, run.entry), run.entry)
        if not resume:
            trackers.log_params({"algorithm": cfg.algorithm, "data_sha256": run.data_sha256,
                                 "backend": f"verl:{run.entry.module}"})
        for name in run.not_applied:
            print(f"warning: {name} is set but verl's trainer does not apply it", file=sys.stderr, flush=True)
        code = launch(run, stdout=sys.stderr)
        if code != 0:
            raise VerlRunError(f"verl's trainer exited with code {code} (its output is above)")
        engine = "token_server" if cfg.device == "cpu" else verl.rollout.name
        results = _finish(cfg, run, start, trackers, began, engine)
        status = "FINISHED"
        return results
    finally:
        trackers.finish(status)


def _finish(cfg: TrainingConfig, run: VerlLaunch, start: ResolvedModel, trackers: Any, began: float,
            engine: str) -> TrainingResults:
    from coding_framework.models.registry import CHALLENGER_ALIAS
    from coding_framework.training.verl.export import actor_dir, save_full_precision

    run_dir = run.inputs.run_dir
    checkpoint = actor_dir(run_dir / "checkpoints")
    final_dir = run_dir / FINAL_MODEL
    if final_dir.exists():
        shutil.rmtree(final_dir)
    save_full_precision(checkpoint, final_dir)
    assert start.model_dir is not None
    changed, largest = weights_changed(start.model_dir, final_dir)
    audit = audit_totals(run_dir / AUDIT_FILE)
    for step, figures in rollout_history(run_dir / AUDIT_FILE).items():
        trackers.log_metrics(figures, step=step)
    before, after, gate = _gate(cfg, start.model_dir, final_dir)
    trackers.log_metrics({**after.metrics(), "weights/max_abs_change": largest}, step=cfg.steps)
    if not gate.passed:
        print(f"gate: the final model is registered without the {CHALLENGER_ALIAS!r} alias: {gate.reason}",
              file=sys.stderr, flush=True)
    registered = trackers.log_model(final_dir, cfg.tracking.registered_model, challenger=gate.passed,
                                    tags={"data_sha256": run.data_sha256, **gate.tags()})
    history = step_history(trackers.mlflow.client, trackers.run_id)
    last = {**(history[-1].metrics if history else {}), **after.metrics(), "weights/changed": float(changed),
            "weights/max_abs_change": largest}
    if "critic/score/mean" in last:  # verl's name for the mean episode reward
        last["reward_mean"] = last["critic/score/mean"]
    results = TrainingResults(
        algorithm=cfg.algorithm, seed=cfg.seed,
        steps=int(checkpoint.parent.name.removeprefix("global_step_")),
        run_dir=run_dir, final_metrics=last, history=history, baseline_pass_at_1=before.pass_at_1,
        heldout_pass_at_1=after.pass_at_1, heldout_problems=after.problems,
        heldout_by_family=after.by_family,
        baseline_by_family=before.by_family, final_model_dir=final_dir, checkpoint=checkpoint,
        mlflow_run_id=trackers.run_id, registered_model=registered, audit=audit,
        seconds=time.perf_counter() - began, data_sha256=run.data_sha256, gate=gate,
        max_staleness=run.off_policy.max_staleness,
        engine=f"verl:{engine}",
    )
    results.write()
    return results
