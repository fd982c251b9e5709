"""The batched workflow graph that `benchmarks/training/orchestration_overhead.py` measures against the
trainer's path.

The trainer runs one invocation of `build_training_graph` per episode (`training.rollout.run_lockstep`);
this package holds the alternative it was measured against, one invocation per batch of episodes.
"""

from benchmarks.training.orchestration.batched_graph import BatchState, build_batched_graph
from benchmarks.training.orchestration.eager import gather_eagerly

__all__ = ["BatchState", "build_batched_graph", "gather_eagerly"]
