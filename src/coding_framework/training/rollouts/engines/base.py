"""What a rollout engine does: hold a policy version's weights and hand out a token engine that samples
with them; and the registry ``rollout.engine`` names one from.

An engine is built by a factory registered with ``@register_rollout_engine(name)`` in a module of this
package (the package imports each of its modules, so the module is the whole edit besides the name in
``config.training.RolloutEngineName``, which a test pins to the registry).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import torch

from coding_framework.config.loader import ConfigError
from coding_framework.config.training import TrainingConfig
from coding_framework.llm.adapters import RoleAdapters
from coding_framework.llm.base import TokenEngine
from coding_framework.llm.local import LocalEngine
from coding_framework.registry import Registry

__all__ = [
    "ROLLOUT_ENGINES", "PolicySnapshot", "PolicyWeights", "RolloutEngine", "RolloutEngineFactory",
    "build_rollout_engine", "register_rollout_engine",
]

PolicySnapshot = dict[str, dict[str, torch.Tensor]]
"""The trained weights of one policy version: per adapter name (``""``: the whole model), CPU copies."""


class RolloutEngine(Protocol):
    """``publish`` makes a version's weights available (the seconds it took are the sync time);
    ``engine_for`` is a token engine sampling with a published version's weights. Versions are published
    in increasing order; ``retire`` says no batch will ask for versions below ``oldest`` again."""

    def publish(self, version: int, snapshot: PolicySnapshot) -> float: ...

    def engine_for(self, version: int) -> TokenEngine: ...

    def retire(self, oldest: int) -> None: ...

    def close(self) -> None: ...


class PolicyWeights(Protocol):
    """What a rollout engine may need of the policy being trained (``RolePolicies``): its role adapters
    (None: the whole model is trained), a CPU copy of its trained weights, and a save of the model."""

    adapters: RoleAdapters | None

    def snapshot(self) -> PolicySnapshot: ...

    def save_model(self, directory: Path, tokenizer: Any) -> None: ...


class RolloutEngineFactory(Protocol):
    """Builds the rollout engine of a run of ``config`` whose trainer samples and trains on ``engine`` (its
    HF model) and ``policy``; ``work_dir`` is the engine's own folder in the run directory."""

    def __call__(self, config: TrainingConfig, engine: LocalEngine, policy: PolicyWeights,
                 work_dir: Path) -> RolloutEngine: ...


ROLLOUT_ENGINES: Registry[RolloutEngineFactory] = Registry("rollout engine", miss=ConfigError)
register_rollout_engine = ROLLOUT_ENGINES.register
"""Register a `RolloutEngineFactory` as the engine ``rollout.engine`` calls ``name``."""


def build_rollout_engine(config: TrainingConfig, engine: LocalEngine, policy: PolicyWeights,
                         work_dir: Path) -> RolloutEngine:
    """The engine ``config.rollout.engine`` names; the error lists the registered names."""
    return ROLLOUT_ENGINES.resolve(config.rollout.engine)(config, engine, policy, work_dir)
