"""Rollouts on the trainer's HF model (``rollout.engine: local``): the model itself (synchronous runs), or a
copy that loads each policy version's weights (asynchronous runs, where the trainer's weights move on while
it samples)."""

from __future__ import annotations

import copy
from pathlib import Path

import torch

from coding_framework.config.training import TrainingConfig
from coding_framework.llm.adapters import RoleAdapters
from coding_framework.llm.base import TokenEngine
from coding_framework.llm.local import LocalEngine
from coding_framework.training.rollouts.engines.base import (
    PolicySnapshot,
    PolicyWeights,
    RolloutEngine,
    register_rollout_engine,
)

__all__ = ["LocalCopyEngine", "TrainerEngine", "local_engine"]


class TrainerEngine:
    """The trainer's own engine: it samples with the weights being trained, so only the current version."""

    def __init__(self, engine: LocalEngine) -> None:
        self.engine = engine
        self.version = 0

    def publish(self, version: int, snapshot: PolicySnapshot) -> float:
        self.version = version
        return 0.0

    def engine_for(self, version: int) -> TokenEngine:
        if version != self.version:
            raise RuntimeError(f"the trainer's engine holds version {self.version}, not {version}")
        return self.engine

    def retire(self, oldest: int) -> None:
        """Nothing to forget: it holds only the weights being trained."""

    def close(self) -> None:
        """Nothing to stop: the engine belongs to the trainer."""


class LocalCopyEngine:
    """A LocalEngine over a deep copy of the trainer's model (and its adapters), loaded with whichever
    published version a batch asks for. Batches run one at a time (``RolloutPipeline``'s worker)."""

    def __init__(self, engine: LocalEngine, adapters: RoleAdapters | None) -> None:
        self.adapters = copy.deepcopy(adapters) if adapters is not None else None
        model = self.adapters.base if self.adapters is not None else copy.deepcopy(engine.model)
        self.engine = LocalEngine(model, engine.tokenizer, device=engine.device, policy_version="0",
                                  max_batch_size=engine.max_batch_size)
        if self.adapters is not None:
            self.engine.attach_adapters(self.adapters)
        self.snapshots: dict[int, PolicySnapshot] = {}
        self.loaded: int | None = None

    def publish(self, version: int, snapshot: PolicySnapshot) -> float:
        self.snapshots[version] = snapshot
        return 0.0

    def engine_for(self, version: int) -> TokenEngine:
        if self.loaded != version:
            self._load(self.snapshots[version])
            self.engine.set_policy_version(str(version))
            self.loaded = version
        return self.engine

    def _load(self, snapshot: PolicySnapshot) -> None:
        with torch.no_grad():
            if self.adapters is None:
                self.engine.model.load_state_dict(snapshot[""], strict=True)
                return
            for name, state in snapshot.items():
                self.adapters.load_state_dict(name, state)

    def retire(self, oldest: int) -> None:
        for version in [v for v in self.snapshots if v < oldest]:
            del self.snapshots[version]

    def close(self) -> None:
        self.engine.close()


@register_rollout_engine("local")
def local_engine(config: TrainingConfig, engine: LocalEngine, policy: PolicyWeights,
                 work_dir: Path) -> RolloutEngine:
    """The trainer's own engine when rollouts are synchronous (``max_staleness`` 0), else a copy of it."""
    if config.rollout.max_staleness:
        return LocalCopyEngine(engine, policy.adapters)
    return TrainerEngine(engine)
