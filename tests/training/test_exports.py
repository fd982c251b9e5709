"""The public API: every exported name resolves, and the trainer's config models are exported."""

from __future__ import annotations

import inspect

import coding_framework.config.training as config_training
import coding_framework.training as training
from coding_framework.config.loader import StrictModel


def test_every_exported_name_resolves_and_lazy_names_are_exported() -> None:
    assert sorted(training.__all__) == sorted(set(training.__all__))
    assert set(training._LAZY) <= set(training.__all__)
    for name in training.__all__:
        assert getattr(training, name) is not None, name


def test_the_trainer_and_its_config_are_exported() -> None:
    assert {"Trainer", "TrainingConfig", "KLConfig", "AlgorithmOverrides", "TrainingResults"} <= set(
        training.__all__
    )
    here = config_training.__name__
    models = {
        name for name, obj in vars(config_training).items()
        if inspect.isclass(obj) and issubclass(obj, StrictModel) and obj.__module__ == here
    }
    assert models <= set(config_training.__all__)
