"""Graph factories for `langgraph dev` / LangGraph Platform (see `langgraph.json` at the repo root).

The graphs build from the default configuration on the embedded model (built on first use, offline).
``CODING_FRAMEWORK_MODEL`` (a backend spec such as ``local:/path`` or ``openai:http://host:8000/v1@name``)
serves another model instead. The two graphs share one engine and one Grader; the server supplies the
checkpointer. The factories are async and build in a worker thread: loading a model blocks, and the
server runs factories on its event loop.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading

from langgraph.graph.state import CompiledStateGraph

from coding_framework.agents.factory import EngineCache
from coding_framework.config.graph import WorkflowConfig
from coding_framework.config.model_ref import parse_model_ref
from coding_framework.grading import Grader
from coding_framework.graphs.build import build_inference_graph, build_training_graph
from coding_framework.graphs.repository import repository_graph_for

MODEL_ENV = "CODING_FRAMEWORK_MODEL"
_lock = threading.Lock()


@functools.cache
def _shared() -> tuple[WorkflowConfig, Grader, EngineCache]:
    config = WorkflowConfig()
    if os.environ.get(MODEL_ENV):
        config.agents.model = parse_model_ref(os.environ[MODEL_ENV])
    return config, Grader(config.sandbox), EngineCache(config.agents.vllm, timeout_s=config.agents.timeout_s)


def _build(kind: str) -> CompiledStateGraph:
    with _lock:  # one build at a time, so concurrent first runs share one engine
        return _cached(kind)


@functools.cache
def _cached(kind: str) -> CompiledStateGraph:
    config, grader, engines = _shared()
    if kind == "repository":
        return repository_graph_for(config, grader, engines=engines)
    builder = build_training_graph if kind == "training" else build_inference_graph
    return builder(config, grader=grader, engines=engines)


async def inference_graph() -> CompiledStateGraph:
    """The inference workflow. Input: ``{"problem": {...}}`` (a Problem) or ``{"text": "..."}``."""
    return await asyncio.to_thread(_build, "inference")


async def training_graph() -> CompiledStateGraph:
    """The training workflow: same input; the state also holds token-exact ``calls`` and ``trajectory``."""
    return await asyncio.to_thread(_build, "training")


async def repository_graph() -> CompiledStateGraph:
    """The repository workflow: a tool-calling agent on a repository task. Input: ``{"task": {...}}`` (a
    RepoTask, e.g. one of ``repotasks.load_minirepos("test")``)."""
    return await asyncio.to_thread(_build, "repository")
