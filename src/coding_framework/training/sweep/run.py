"""Run a sweep: a local Ray cluster (no dashboard) or an existing one, Ray Tune with ASHA over
``train_trial``, CPU (and custom) resources per trial, and the outcome in the sweep's MLflow store and
``sweep.json``.

A failed trial (its node lost, its worker killed) is restarted up to ``max_failures`` times from the last
checkpoint it reported, on any node with room; Tune keeps each trial's newest checkpoint under
``<run_dir>/tune``, so on a real cluster the run directory must be on storage every node shares.

The best trial is the best by its last reported metric among the trials that finished all their steps
(among all trials when none did): a trial ASHA stopped early was behind when it stopped.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import ray
from pydantic import BaseModel, Field
from ray import tune
from ray.tune.schedulers import ASHAScheduler, FIFOScheduler, TrialScheduler
from ray.tune.search import BasicVariantGenerator

from coding_framework.config.loader import ConfigError
from coding_framework.config.sweep import SweepConfig, check_values
from coding_framework.logs import get_logger
from coding_framework.training.sweep.plot import plot_sweep
from coding_framework.training.sweep.progress import SweepProgress
from coding_framework.training.sweep.space import trial_count, tune_space
from coding_framework.training.sweep.tracking import STOPPED_EARLY, SweepRun
from coding_framework.training.sweep.trial import (
    FINISHED,
    NODE,
    RESUMED_FROM,
    STEP,
    TRIALS_DIR,
    train_trial,
)

__all__ = ["SWEEP_FILE", "SweepError", "SweepResults", "run_sweep"]

log = get_logger(__name__)

SWEEP_FILE = "sweep.json"
PLOT_FILE = "sweep.png"


class SweepError(RuntimeError):
    """A trial failed, restarts included (``max_failures``); the message is the trial's error."""


class SweepResults(BaseModel):
    trials: list[dict[str, Any]] = Field(
        description="Per trial: trial_id, params, metric (last reported), steps, status (completed, "
        "stopped_early, error), run_dir, mlflow_run_id, failures (each followed by a restart, but the last "
        "of a trial in error), resumed_from (the step its last restart resumed from), nodes (the Ray node "
        "ids it ran on, in order), curve "
        "([step, metric] as reported: a restarted trial reports the steps after its checkpoint again)."
    )
    best: dict[str, Any] | None = Field(description="The best trial (same fields).")
    metric: str
    mode: str
    run_dir: Path
    mlflow_uri: str
    mlflow_run_id: str = Field(description="The parent sweep run.")
    plot: Path = Field(description="Each trial's metric per step (PNG).")
    seconds: float

    def summary(self) -> dict[str, Any]:
        """The JSON object the CLI prints last."""
        count = {s: sum(t["status"] == s for t in self.trials) for s in ("completed", STOPPED_EARLY, "error")}
        best = self.best or {}
        return {
            "trials": len(self.trials),
            **{f"trials_{k}": v for k, v in count.items()},
            "best": best.get("params"),
            "best_metric": best.get("metric"),
            "best_trial": best.get("trial_id"),
            "best_config_file": str(Path(best["run_dir"]) / "config.json") if best else None,
            "metric": self.metric,
            "mode": self.mode,
            "seconds": round(self.seconds, 1),
            "mlflow_uri": self.mlflow_uri,
            "mlflow_run_id": self.mlflow_run_id,
            "run_dir": str(self.run_dir),
            "plot": str(self.plot),
            "per_trial": [{k: v for k, v in t.items() if k != "curve"} for t in self.trials],
        }


def _scheduler(sweep: SweepConfig, steps: int) -> TrialScheduler:
    if not sweep.asha.enabled:
        return FIFOScheduler()
    max_t = sweep.asha.max_t or steps
    return ASHAScheduler(
        time_attr=STEP,
        max_t=max_t,
        grace_period=min(sweep.asha.grace_period, max_t),
        reduction_factor=sweep.asha.reduction_factor,
    )


def _failure_config(sweep: SweepConfig) -> tune.FailureConfig:
    if sweep.max_failures == 0:
        return tune.FailureConfig(fail_fast=True)
    return tune.FailureConfig(max_failures=sweep.max_failures)


def _tuner(
    sweep: SweepConfig, base: dict[str, Any], run_dir: Path, uri: str, callbacks: list[tune.Callback]
) -> Any:
    trainable = tune.with_parameters(
        train_trial,
        base=base,
        sweep_dir=str(run_dir),
        metric=sweep.metric,
        mlflow_uri=uri,
        experiment=sweep.experiment,
    )
    return tune.Tuner(
        tune.with_resources(trainable, {"cpu": sweep.cpus_per_trial, **sweep.trial_resources}),
        param_space=tune_space(sweep),
        tune_config=tune.TuneConfig(
            metric=sweep.metric,
            mode=sweep.mode,
            num_samples=sweep.num_samples,
            reuse_actors=True,  # a new trial skips the worker's start and imports (seconds each here)
            scheduler=_scheduler(sweep, int(base["steps"])),
            search_alg=BasicVariantGenerator(
                max_concurrent=sweep.max_concurrent_trials, random_state=sweep.seed
            ),
        ),
        run_config=tune.RunConfig(
            name="tune",
            storage_path=str(run_dir),
            verbose=0,
            callbacks=callbacks,
            failure_config=_failure_config(sweep),
            # The trainer keeps its own checkpoints; Tune's copy is only for a restart.
            checkpoint_config=tune.CheckpointConfig(num_to_keep=1),
        ),
    )


def _trial(
    result: Any, run_dir: Path, sweep: SweepRun, metric: str, restarts: dict[str, int]
) -> dict[str, Any]:
    last = result.metrics or {}
    trial_id = str(last.get("trial_id") or Path(result.path).name)
    status = "completed" if last.get(FINISHED) else STOPPED_EARLY
    if result.error is not None:
        status = "error"
    trial_dir = run_dir / TRIALS_DIR / trial_id
    value = last.get(metric)
    frame = result.metrics_dataframe  # every result the trial reported
    curve, nodes = [], []
    if frame is not None and STEP in frame and metric in frame:
        curve = [[int(s), float(v)] for s, v in frame[[STEP, metric]].dropna().itertuples(index=False)]
    if frame is not None and NODE in frame:
        nodes = [str(n) for n in dict.fromkeys(frame[NODE].dropna())]
    resumed = last.get(RESUMED_FROM)
    return {
        "trial_id": trial_id,
        "params": dict(result.config or {}),
        "metric": float(value) if isinstance(value, int | float) else None,
        "steps": last.get(STEP),
        "status": status,
        "run_dir": str(trial_dir),
        "mlflow_run_id": sweep.link_trial(trial_dir, trial_id, status),
        "failures": restarts.get(trial_id, 0) + (status == "error"),
        "resumed_from": int(resumed) if isinstance(resumed, int | float) else None,
        "nodes": nodes,
        "curve": curve,
    }


def _best(trials: list[dict[str, Any]], mode: str) -> dict[str, Any] | None:
    scored = [t for t in trials if t["metric"] is not None]
    finished = [t for t in scored if t["status"] == "completed"] or scored
    if not finished:
        return None
    pick = max if mode == "max" else min
    return pick(finished, key=lambda t: t["metric"])


def _raise_first_error(results: list[Any]) -> None:
    """A trial's error as a one-line ConfigError (bad input found in a trial, such as an unknown metric)
    or SweepError. Tune's error is a RayTaskError that is also an instance of the trial's exception."""
    errors = [r.error for r in results if r.error is not None]
    if not errors:
        return
    lines = [ln for ln in str(errors[0]).strip().splitlines() if ln.strip()]
    last = lines[-1] if lines else type(errors[0]).__name__
    if isinstance(errors[0], ConfigError):
        raise ConfigError(last.removeprefix(f"{ConfigError.__module__}.{ConfigError.__name__}: "))
    raise SweepError(f"a trial failed: {last}")


def _outcome(
    grid: Any, out: Path, parent: SweepRun, sweep: SweepConfig, restarts: dict[str, int]
) -> tuple[list[dict[str, Any]], dict[str, Any] | None, Path]:
    """The trials, the best and the plot, recorded in the parent run; raises if a trial failed."""
    results = [grid[i] for i in range(len(grid))]
    trials = [_trial(r, out, parent, sweep.metric, restarts) for r in results]
    best = _best(trials, sweep.mode)
    plot = plot_sweep(trials, best, sweep.metric, out / PLOT_FILE)
    parent.record(trials, best, sweep.metric, plot)
    _raise_first_error(results)
    return trials, best, plot


def run_sweep(
    sweep: SweepConfig,
    base: dict[str, Any],
    run_dir: str | Path,
    *,
    progress: bool = True,
    ray_address: str | None = None,
    callbacks: Sequence[tune.Callback] = (),
) -> SweepResults:
    """Run ``sweep`` over ``base`` (from ``config.sweep.load_sweep``) in ``run_dir``. Unless Ray is already
    initialised, joins the cluster at ``ray_address`` (``auto``: the one this node belongs to) or starts a
    local one of ``sweep.ray_cpus`` CPUs, and leaves it after. ``callbacks`` are Tune callbacks added to
    the progress bar's."""
    start = time.perf_counter()
    check_values(sweep, base)
    out = Path(run_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    parent = SweepRun(sweep, out)
    owns_ray = not ray.is_initialized()
    status = "FAILED"
    try:
        if owns_ray and ray_address is not None:
            ray.init(address=ray_address, log_to_driver=False, logging_level=logging.WARNING)
        elif owns_ray:
            ray.init(
                num_cpus=sweep.ray_cpus,
                include_dashboard=False,
                log_to_driver=False,
                logging_level=logging.WARNING,
            )
        # Tune prints its banner to stdout, whose last line is the CLI's JSON: it goes to stderr.
        with contextlib.redirect_stdout(sys.stderr), SweepProgress(
            trial_count(sweep), sweep.metric, sweep.mode, progress
        ) as bar:
            grid = _tuner(sweep, base, out, parent.uri, [bar, *callbacks]).fit()
        trials, best, plot = _outcome(grid, out, parent, sweep, bar.restarts)
        status = "FINISHED"
    finally:
        if owns_ray:
            ray.shutdown()
        parent.finish(status)
    outcome = SweepResults(
        trials=trials,
        best=best,
        metric=sweep.metric,
        mode=sweep.mode,
        run_dir=out,
        mlflow_uri=parent.uri,
        mlflow_run_id=parent.run_id,
        plot=plot,
        seconds=time.perf_counter() - start,
    )
    (out / SWEEP_FILE).write_text(outcome.model_dump_json(indent=2) + "\n")
    log.info("sweep_done", trials=len(trials), best_metric=outcome.summary()["best_metric"])
    return outcome
