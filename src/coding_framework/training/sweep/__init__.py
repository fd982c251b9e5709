"""Hyperparameter sweeps over our own trainer with Ray Tune: ASHA early stopping over training steps, CPU
resources per trial, every trial's trainer run and a parent sweep run in one MLflow store.

``load_sweep`` (from ``config.sweep``) reads a ``SweepConfig`` and its base ``TrainingConfig``;
``run_sweep`` runs it. Ray is
imported here, so nothing below ``training`` imports this package.
"""

from coding_framework.config.sweep import load_sweep
from coding_framework.training.sweep.run import SWEEP_FILE, SweepError, SweepResults, run_sweep
from coding_framework.training.sweep.space import trial_count, tune_space
from coding_framework.training.sweep.trial import train_trial

__all__ = [
    "SWEEP_FILE", "SweepError", "SweepResults", "load_sweep", "run_sweep", "train_trial", "trial_count",
    "tune_space",
]
