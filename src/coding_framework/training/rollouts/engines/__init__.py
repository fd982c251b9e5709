"""Where a run's rollouts are sampled, and the pipeline that keeps them at most K policy versions old.

``rollout.engine`` names a registered engine (``register_rollout_engine``); every module of this package is
imported below, so an engine's module registers it just by being here.

- ``local``: the trainer's own model (K = 0, today's synchronous trainer) or, with K >= 1, a copy of it
  that loads each policy version's weights (``LocalCopyEngine``);
- ``vllm``: a vLLM server the run starts or attaches to, which gets each version's LoRA adapters under
  new, immutable names (``VLLMRolloutEngine``).

``RolloutPipeline`` runs the fixed schedule: step t's batch is sampled by version ``max(0, t - K)``.
"""

import importlib
import pkgutil

from coding_framework.training.rollouts.engines.base import (
    ROLLOUT_ENGINES,
    PolicySnapshot,
    PolicyWeights,
    RolloutEngine,
    RolloutEngineFactory,
    build_rollout_engine,
    register_rollout_engine,
)
from coding_framework.training.rollouts.engines.local_copy import LocalCopyEngine, TrainerEngine
from coding_framework.training.rollouts.engines.pipeline import (
    Produced,
    RolloutJob,
    RolloutPipeline,
    behaviour_version,
)
from coding_framework.training.rollouts.engines.vllm_engine import VLLMRolloutEngine

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = [
    "ROLLOUT_ENGINES", "LocalCopyEngine", "PolicySnapshot", "PolicyWeights", "Produced", "RolloutEngine",
    "RolloutEngineFactory", "RolloutJob", "RolloutPipeline", "TrainerEngine", "VLLMRolloutEngine",
    "behaviour_version", "build_rollout_engine", "register_rollout_engine",
]
