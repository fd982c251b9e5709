"""LangGraph workflows: generate -> execute -> review -> revise, for inference and for training."""

from coding_framework.graphs.batched import BatchState, build_batched_graph
from coding_framework.graphs.build import build_graph, build_inference_graph, build_training_graph
from coding_framework.graphs.state import EpisodeState, RoundRecord

__all__ = [
    "BatchState",
    "EpisodeState",
    "RoundRecord",
    "build_batched_graph",
    "build_graph",
    "build_inference_graph",
    "build_training_graph",
]
