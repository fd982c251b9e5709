"""LangGraph workflows: generate -> execute -> review -> revise, for inference and for training."""

from coding_framework.graphs.build import build_graph, build_inference_graph, build_training_graph
from coding_framework.graphs.state import EpisodeState, RoundRecord

__all__ = [
    "EpisodeState",
    "RoundRecord",
    "build_graph",
    "build_inference_graph",
    "build_training_graph",
]
