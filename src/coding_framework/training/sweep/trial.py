"""One sweep trial, run by Ray Tune in a worker process: our ``Trainer`` in the trial's own run directory,
each step's metrics reported to Tune so that ASHA can stop the trial between steps.

Steps before the last are reported as they end; the last step is reported once the run has finished,
with the final held-out pass@1, and marked ``FINISHED`` (a trial whose last result lacks the mark was
stopped by the scheduler). A stop arrives as ``SystemExit`` from ``tune.report``, which ends the trainer
through its own cleanup (its MLflow run is closed, the sandbox shut down).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ray import tune

from coding_framework.config.loader import ConfigError
from coding_framework.config.sweep import apply_dotted, training_config
from coding_framework.training.trainer import Trainer

__all__ = ["FINISHED", "STEP", "TRIALS_DIR", "train_trial"]

STEP = "step"  # ASHA's time attribute: training steps completed
FINISHED = "finished"
TRIALS_DIR = "trials"
HELDOUT = "heldout_pass@1"  # reported only at `eval.every` steps and at the end


def train_trial(
    params: dict[str, Any],
    *,
    base: dict[str, Any],
    sweep_dir: str,
    metric: str,
    mlflow_uri: str,
    experiment: str,
) -> None:
    """Tune's function trainable: ``params`` are the trial's sampled values at dotted keys."""
    tracking = {"tracking.mlflow_uri": mlflow_uri, "tracking.experiment": experiment}
    trial_id = tune.get_context().get_trial_id()
    config = training_config(apply_dotted(base, {**params, **tracking}), f"trial {trial_id}")
    run_dir = Path(sweep_dir) / TRIALS_DIR / trial_id
    seen: dict[str, float] = {}  # the newest value of every metric, so sparse ones (held-out) carry over

    def report(step: int, metrics: dict[str, float]) -> None:
        if step == 1 and metric not in metrics and metric != HELDOUT:
            raise ConfigError(
                f"metric {metric!r} is not a metric the trainer reports; it reports: {sorted(metrics)}"
            )
        seen.update(metrics)
        if step < config.steps:
            tune.report({**seen, STEP: step})

    results = Trainer(config, run_dir, progress=False, on_step=report).run()
    tune.report({**seen, **results.final_metrics, STEP: results.steps, FINISHED: 1.0})
