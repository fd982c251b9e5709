"""Build the workflow graph: generate -> execute -> (review) -> revise -> generate, until a stop."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from coding_framework.agents.executor import AsyncGrader
from coding_framework.agents.factory import Agents, EngineCache, build_agents
from coding_framework.config.graph import GraphConfig, WorkflowConfig
from coding_framework.grading import Grader
from coding_framework.graphs.nodes import make_nodes
from coding_framework.graphs.routing import EXECUTE, GENERATE, REVIEW, REVISE, after_execute, after_review
from coding_framework.graphs.state import EpisodeState
from coding_framework.llm.base import TokenEngine


def recursion_limit(config: GraphConfig) -> int:
    """Supersteps an episode may take: at most four nodes per round, plus slack."""
    return 4 * config.max_rounds + 4


def routing_config(agents: Agents, config: GraphConfig) -> GraphConfig:
    """``config`` as routing applies it: without a reviewer, failing drafts go straight to revise."""
    if agents.reviewer is None and config.review != "never":
        return config.model_copy(update={"review": "never"})
    return config


def add_workflow(
    graph: StateGraph,
    nodes: Mapping[str, Any],
    has_reviewer: bool,
    route_execute: Callable[[Any], str],
    route_review: Callable[[Any], str],
) -> None:
    """Add the nodes and edges of the workflow to ``graph``, routed by ``route_execute``/``route_review``.

    `build_graph` and the benchmark's batched graph (`benchmarks/training/orchestration`) both build on it.
    """
    for name in (GENERATE, EXECUTE, REVISE, *((REVIEW,) if has_reviewer else ())):
        graph.add_node(name, nodes[name])
    graph.add_edge(START, GENERATE)
    graph.add_edge(GENERATE, EXECUTE)
    graph.add_conditional_edges(
        EXECUTE, route_execute, [REVIEW, REVISE, END] if has_reviewer else [REVISE, END]
    )
    if has_reviewer:
        graph.add_conditional_edges(REVIEW, route_review, [REVISE, END])
    graph.add_edge(REVISE, GENERATE)


def build_graph(
    agents: Agents,
    config: GraphConfig,
    *,
    checkpointer: BaseCheckpointSaver | None = None,
    name: str = "coding_workflow",
) -> CompiledStateGraph:
    """Compile the workflow for one episode per invocation over ``agents``."""
    config = routing_config(agents, config)
    graph = StateGraph(EpisodeState)
    # A closure, not functools.partial: LangGraph would inject its RunnableConfig into a `config` keyword.
    add_workflow(
        graph,
        make_nodes(agents, config),
        agents.reviewer is not None,
        lambda state: after_execute(state, config),
        after_review,
    )
    compiled = graph.compile(checkpointer=checkpointer, name=name)
    return compiled.with_config(recursion_limit=recursion_limit(config))


def build_inference_graph(
    config: WorkflowConfig | None = None,
    *,
    grader: AsyncGrader | None = None,
    chat_model: BaseChatModel | None = None,
    reviewer_model: BaseChatModel | None = None,
    checkpointer: BaseCheckpointSaver | None = None,
    engines: EngineCache | None = None,
) -> CompiledStateGraph:
    """The workflow with a chat-model Generator. Backends not given are built from ``config``.

    A Grader built here (``grader=None``) starts its sandbox workers on first use and lives as long as
    the process; pass one to control its lifetime.
    """
    config = config or WorkflowConfig()
    agents = build_agents(
        config.agents,
        grader or Grader(config.sandbox),
        mode="inference",
        chat_model=chat_model,
        reviewer_model=reviewer_model,
        engines=engines,
    )
    return build_graph(agents, config.graph, checkpointer=checkpointer, name="coding_inference")


def build_training_graph(
    config: WorkflowConfig | None = None,
    *,
    grader: AsyncGrader | None = None,
    engine: TokenEngine | None = None,
    reviewer_model: BaseChatModel | None = None,
    checkpointer: BaseCheckpointSaver | None = None,
    engines: EngineCache | None = None,
) -> CompiledStateGraph:
    """The same topology with every Generator call going through the episode's TokenSession.

    The final state's ``calls`` (one record per Generator call) and ``trajectory`` (the session's ids,
    loss mask and logprobs) are what trajectory builders read.
    """
    config = config or WorkflowConfig()
    agents = build_agents(
        config.agents,
        grader or Grader(config.sandbox),
        mode="training",
        engine=engine,
        reviewer_model=reviewer_model,
        engines=engines,
    )
    return build_graph(agents, config.graph, checkpointer=checkpointer, name="coding_training")
