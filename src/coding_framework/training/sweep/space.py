"""A sweep's search space as Ray Tune's ``param_space``, and how many trials it makes."""

from __future__ import annotations

import math
from typing import Any

from ray import tune

from coding_framework.config.sweep import ChoiceDimension, GridDimension, LogUniformDimension, SweepConfig

__all__ = ["trial_count", "tune_space"]


def tune_space(sweep: SweepConfig) -> dict[str, Any]:
    """The search space as Tune's ``param_space``, flat, keyed by the dotted TrainingConfig keys."""
    space: dict[str, Any] = {}
    for key, dim in sweep.search_space.items():
        if isinstance(dim, GridDimension):
            space[key] = tune.grid_search(dim.values)
        elif isinstance(dim, ChoiceDimension):
            space[key] = tune.choice(dim.values)
        elif isinstance(dim, LogUniformDimension):
            space[key] = tune.loguniform(dim.low, dim.high)
        else:
            space[key] = tune.uniform(dim.low, dim.high)
    return space


def trial_count(sweep: SweepConfig) -> int:
    """Trials Tune will run: ``num_samples`` times the number of grid combinations."""
    grids = [len(d.values) for d in sweep.search_space.values() if isinstance(d, GridDimension)]
    return sweep.num_samples * math.prod(grids)
