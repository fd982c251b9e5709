"""Every TrainingConfig field is either applied by the verl path (``overrides.MAPPED``) or named in
``overrides.NOT_APPLIED`` (a warning, or refused where ignoring it changes what is learned)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pydantic import BaseModel

from coding_framework.config.training import TrainingConfig
from coding_framework.training.algos.algorithms import get_algorithm
from coding_framework.training.verl.overrides import (
    MAPPED,
    NOT_APPLIED,
    VerlMappingError,
    _section,
    not_applied,
)


def leaf_fields(model: type[BaseModel], prefix: str = "") -> Iterator[str]:
    """Every field's dotted path, descending into nested config models."""
    for name, field in model.model_fields.items():
        kind = field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            yield from leaf_fields(kind, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}"


def test_every_field_is_mapped_or_listed_as_not_applied() -> None:
    fields = list(leaf_fields(TrainingConfig))
    assert len(fields) > 200  # the walk reached the nested sections
    orphans = [f for f in fields if _section(f, MAPPED) is None and _section(f, NOT_APPLIED) is None]
    assert orphans == [], f"neither mapped to verl nor in NOT_APPLIED: {orphans}"
    both = [f for f in fields if _section(f, MAPPED) is not None and _section(f, NOT_APPLIED) is not None]
    assert both == [], f"both mapped and not applied: {both}"


def test_every_table_entry_names_a_real_field() -> None:
    fields = set(leaf_fields(TrainingConfig))
    for entry in [*MAPPED, *NOT_APPLIED]:
        assert any(f == entry or f.startswith(entry + ".") for f in fields), entry


def test_defaults_are_neither_warned_about_nor_refused() -> None:
    assert not_applied(TrainingConfig(), get_algorithm("grpo")) == []


@pytest.mark.parametrize("path", sorted(p for p, n in NOT_APPLIED.items() if n.changes_learning))
def test_a_field_that_changes_learning_is_refused_when_set(path: str) -> None:
    cfg = _set_away_from_default(path)
    with pytest.raises(VerlMappingError, match=path.replace(".", r"\.")):
        not_applied(cfg, get_algorithm("grpo"))


@pytest.mark.parametrize("path", sorted(p for p, n in NOT_APPLIED.items() if not n.changes_learning))
def test_other_fields_are_warnings_when_set(path: str) -> None:
    assert path in not_applied(_set_away_from_default(path), get_algorithm("grpo"))


_AWAY = {
    "threads": 1, "rollout.temperature_end": 0.5, "rollout.max_batch_size": 7,
    "rollout.mask_overlong": True, "rollout.overlong_buffer": 8, "rollout.overlong_penalty": 0.5,
    "rollout.refill_zero_variance": True, "rollout.max_refill_rounds": 3, "reward.normalize": "batch",
    "reward.clip": 1.0, "optim.micro_batch_size": 3, "algo.value_coef": 0.25, "kl.stop_kl": 2.0,
    "kl.stop_patience": 3, "tracking.log_checkpoints": False, "audit.every": 2, "audit.rows": 3,
    "tracking.trace_every": 3, "tracking.trace_episodes": 5,
    "eval.engine": "rollout",
}
_SECTIONS = {
    "rollout.engine": {"rollout": {"engine": "vllm"}, "policies": {"mode": "shared_lora"}},
    "rollout.vllm": {"rollout": {"vllm": {"max_num_seqs": 3}}},
    "rollout.engine_url": {"rollout": {"engine": "vllm", "engine_url": "http://h:1@m"},
                           "policies": {"mode": "shared_lora"}},
    "reward.review": {"reward": {"review": {"improved": 0.3}}},
    "optim.precision": {"optim": {"precision": "bf16"}, "device": "cuda"},
    "optim.gradient_checkpointing": {"optim": {"gradient_checkpointing": True}, "device": "cuda"},
    "curriculum": {"curriculum": {"enabled": True}},
}


def _set_away_from_default(path: str) -> TrainingConfig:
    if path in _SECTIONS:
        return TrainingConfig.model_validate(_SECTIONS[path])
    data: dict = {}
    node = data
    *parents, leaf = path.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = _AWAY[path]
    return TrainingConfig.model_validate(data)
