"""Where a run's rollouts are sampled, and the pipeline that keeps them at most K policy versions old.

- ``local``: the trainer's own model (K = 0, today's synchronous trainer) or, with K >= 1, a copy of it
  that loads each policy version's weights (``LocalCopyEngine``);
- ``vllm``: a vLLM server the run starts or attaches to, which gets each version's LoRA adapters under
  new, immutable names (``VLLMRolloutEngine``).

``RolloutPipeline`` runs the fixed schedule: step t's batch is sampled by version ``max(0, t - K)``.
"""

from coding_framework.training.rollouts.engines.base import PolicySnapshot, RolloutEngine
from coding_framework.training.rollouts.engines.local_copy import LocalCopyEngine, TrainerEngine
from coding_framework.training.rollouts.engines.pipeline import (
    Produced,
    RolloutJob,
    RolloutPipeline,
    behaviour_version,
)
from coding_framework.training.rollouts.engines.vllm_engine import VLLMRolloutEngine

__all__ = [
    "LocalCopyEngine", "PolicySnapshot", "Produced", "RolloutEngine", "RolloutJob", "RolloutPipeline",
    "TrainerEngine", "VLLMRolloutEngine", "behaviour_version",
]
