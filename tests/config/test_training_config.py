"""The training config is checked when it loads: algorithm names and spec overrides pinned to the registry,
typed KL settings, the device, and the split that keeps held-out constants unseen by SFT and RL."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

import pytest

from coding_framework.config import ConfigError, load_config
from coding_framework.config.algorithm import ALGORITHM_NAMES, AlgorithmOverrides
from coding_framework.config.kl import KLConfig
from coding_framework.config.training import TrainingConfig
from coding_framework.training.algos.algorithms import ALGORITHMS, AlgorithmSpec

NOT_OVERRIDABLE = {"name", "paper"}  # identity and provenance of a registered spec


def _load(**overrides: Any) -> TrainingConfig:
    return load_config(TrainingConfig, overrides=overrides)


def test_the_config_accepts_exactly_the_registered_algorithms() -> None:
    assert set(ALGORITHM_NAMES) == set(ALGORITHMS), (
        "register each algorithm in training/algos/algorithms.py and name it in config/algorithm.py's "
        "AlgorithmName"
    )


def test_overrides_mirror_the_spec_fields_and_their_types() -> None:
    spec_types = typing.get_type_hints(AlgorithmSpec)
    spec_fields = {f.name for f in dataclasses.fields(AlgorithmSpec)} - NOT_OVERRIDABLE
    assert set(AlgorithmOverrides.model_fields) == spec_fields
    for name, field in AlgorithmOverrides.model_fields.items():
        assert field.annotation == spec_types[name] | None, name


def test_an_unknown_algorithm_fails_at_load_listing_the_valid_ones() -> None:
    listing = r"algorithm: .*unknown algorithm 'a2c'; valid algorithms: \['dapo', 'grpo', 'ppo', 'rein"
    with pytest.raises(ConfigError, match=listing):
        _load(algorithm="a2c")


def test_an_unknown_override_fails_at_load_listing_the_valid_fields() -> None:
    listing = r"algo\.overrides: .*unknown algorithm fields \['clip'\]; valid: \['adv_estimator'"
    with pytest.raises(ConfigError, match=listing):
        _load(algo={"overrides": {"clip": 0.3, "lam": 0.9}})
    with pytest.raises(ConfigError, match=r"algo\.overrides\.lam"):
        _load(algo={"overrides": {"lam": "high"}})


def test_overrides_replace_only_what_they_set() -> None:
    cfg = _load(algorithm="ppo", algo={"overrides": {"lam": 0.9, "dynamic_sampling": False}})
    assert cfg.algo.overrides.replaced() == {"lam": 0.9, "dynamic_sampling": False}
    assert TrainingConfig().algo.overrides.replaced() == {}
    again = TrainingConfig.model_validate(cfg.model_dump(mode="json"))  # how run dirs store it
    assert again == cfg and again.algo.overrides.replaced() == {"lam": 0.9, "dynamic_sampling": False}


def test_kl_is_typed_and_checked_at_load() -> None:
    assert _load(kl={"mode": "loss", "coef": 0.01}).kl == KLConfig(mode="loss", coef=0.01)
    with pytest.raises(ConfigError, match=r"kl\.estimator"):
        _load(kl={"estimator": "k9"})
    with pytest.raises(ConfigError, match=r"kl\.stop_patienec: .*unknown key"):
        _load(kl={"stop_patienec": 3})
    with pytest.raises(ConfigError, match=r"set kl\.mode: reward"):
        _load(kl={"mode": "loss", "controller": "adaptive"})


def test_device_is_auto_cpu_or_cuda() -> None:
    assert TrainingConfig().device == "auto"
    assert _load(device="cpu").device == "cpu"
    with pytest.raises(ConfigError, match=r"device: Input should be 'auto', 'cpu' or 'cuda'"):
        _load(device="tpu")


@pytest.mark.parametrize(
    ("data", "named"),
    [
        ({"split_seed": 1}, r"data\.split_seed \(1\) != embedded\.data\.synthetic_seed \(0\)"),
        (
            {"heldout_fraction": 0.3},
            r"data\.heldout_fraction \(0\.3\) != embedded\.data\.synthetic_heldout_fraction \(0\.25\)",
        ),
    ],
)
def test_the_embedded_models_heldout_constants_must_be_the_sft_splits(data: dict, named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        _load(data=data)


def test_the_split_invariant_holds_when_both_sides_move_or_sft_saw_no_synthetic_data() -> None:
    sft = {"synthetic_seed": 1, "synthetic_heldout_fraction": 0.3}
    assert _load(data={"split_seed": 1, "heldout_fraction": 0.3}, embedded={"data": sft}).data.split_seed == 1
    assert _load(data={"split_seed": 1}, embedded={"data": {"synthetic_per_family": 0}}).data.split_seed == 1
    assert _load(data={"split_seed": 1}, model="/models/other").data.split_seed == 1  # another model's SFT
    with pytest.raises(ConfigError, match=r"data\.split_seed"):
        _load(embedded={"data": {"synthetic_seed": 2}})

