"""One sweep trial, run by Ray Tune in a worker process: our ``Trainer`` in the trial's own run directory,
each step's metrics reported to Tune so that ASHA can stop the trial between steps.

Steps before the last are reported as they end; the last step is reported once the run has finished,
with the final held-out pass@1, and marked ``FINISHED`` (a trial whose last result lacks the mark was
stopped by the scheduler). A stop arrives as ``SystemExit`` from ``tune.report``, which ends the trainer
through its own cleanup (its MLflow run is closed, the sandbox shut down).

A step that the trainer checkpointed is reported with that checkpoint (its ``step-NNNNNN`` directory,
copied by Tune into the sweep's storage). When Tune restarts a failed trial (its node was lost, its
worker killed), possibly on another node, the trial puts Tune's checkpoint back where the trainer's
resume looks and resumes from it, as ``train --resume`` does; steps after that checkpoint are trained
again. Each result says the node it ran on and, after a restart, the step the trial resumed from.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import ray
from ray import tune

from coding_framework.config.loader import ConfigError
from coding_framework.config.sweep import apply_dotted, training_config
from coding_framework.logs import get_logger
from coding_framework.training.run.checkpoint import MANIFEST, CheckpointError, CheckpointManager, verify
from coding_framework.training.trainer import Trainer

__all__ = ["FINISHED", "NODE", "RESUMED_FROM", "STEP", "TRIALS_DIR", "train_trial"]

log = get_logger(__name__)

STEP = "step"  # ASHA's time attribute: training steps completed
FINISHED = "finished"
NODE = "node_id"  # the Ray node the result came from (node IPs alone do not tell nodes on one host apart)
RESUMED_FROM = "resumed_from_step"  # only after a restart: the checkpoint's step, 0 when there was none
TRIALS_DIR = "trials"
HELDOUT = "heldout_pass@1"  # reported only at `eval.every` steps and at the end


def _restore(checkpoint: tune.Checkpoint | None, checkpoints: CheckpointManager) -> int:
    """Make Tune's checkpoint of this trial the newest in ``checkpoints``; its step (0: Tune has none).

    Newer checkpoints the last attempt saved but never reported are removed: Tune's metric history ends at
    the reported one. Tune's copy is fetched unless the same checkpoint is already there (shared storage).
    """
    step = 0
    if checkpoint is not None:
        with checkpoint.as_directory() as src:
            step = int(json.loads((Path(src) / MANIFEST).read_text())["step"])
            target = checkpoints.path_for(step)
            try:
                verify(target)
            except (CheckpointError, OSError):
                shutil.rmtree(target, ignore_errors=True)
                shutil.copytree(src, target)
    for newer in (s for s in checkpoints.steps() if s > step):
        shutil.rmtree(checkpoints.path_for(newer))
    return step


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
    # Trial ids are unique, so an existing run directory means that this is a restart.
    restart = run_dir.exists()
    where: dict[str, Any] = {NODE: ray.get_runtime_context().get_node_id()}
    if restart:
        checkpoints = CheckpointManager(run_dir / "checkpoints", config.checkpoint.keep_last)
        where[RESUMED_FROM] = _restore(tune.get_checkpoint(), checkpoints)
        log.info("trial_restarted", trial=trial_id, node=where[NODE], resumed_from_step=where[RESUMED_FROM])
    seen: dict[str, float] = {}  # the newest value of every metric, so sparse ones (held-out) carry over

    def report(step: int, metrics: dict[str, float]) -> None:
        if step == 1 and metric not in metrics and metric != HELDOUT:
            raise ConfigError(
                f"metric {metric!r} is not a metric the trainer reports; it reports: {sorted(metrics)}"
            )
        seen.update(metrics)
        if step < config.steps:
            saved = trainer.checkpoints.path_for(step)
            checkpoint = tune.Checkpoint.from_directory(saved) if saved.is_dir() else None
            tune.report({**seen, **where, STEP: step}, checkpoint=checkpoint)

    trainer = Trainer(config, run_dir, progress=False, on_step=report, resume=restart)
    results = trainer.run()
    tune.report({**seen, **results.final_metrics, **where, STEP: results.steps, FINISHED: 1.0})
