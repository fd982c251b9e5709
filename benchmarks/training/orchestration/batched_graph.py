"""The workflow over a batch of episodes per graph invocation: same nodes, same routing, less overhead.

LangGraph's cost is per superstep, not per episode. A rollout runs hundreds of episodes of one workflow,
and every episode walks the same node sequence (generate, execute, then review and/or revise, or stop),
so a batch can move in lockstep: each node runs its per-episode function on every episode routed to it,
concurrently, and merges each partial update with the reducers declared on `EpisodeState`. A batch of B
episodes then pays one superstep where B single-episode graphs pay B. The trainer does not run this
graph: it runs one `build_training_graph` invocation per episode (`training.rollout.run_lockstep`), and
`benchmarks/training/orchestration_overhead.py` measures both.

Each episode's step starts inline and becomes a task only if it waits (`gather_eagerly`). It runs
detached from the batch node's LangChain run context: nesting hundreds of episodes' LLM calls under one
node's trace is noise, and copying that context into every call costs more than a fast model's call.
"""

from __future__ import annotations

import contextvars
import inspect
import typing
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypedDict

from langchain_core.runnables.config import var_child_runnable_config
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, StateGraph
from langgraph.graph.state import CompiledStateGraph

from benchmarks.training.orchestration.eager import gather_eagerly
from coding_framework.agents.factory import Agents
from coding_framework.config.graph import GraphConfig
from coding_framework.graphs.build import add_workflow, recursion_limit, routing_config
from coding_framework.graphs.nodes import Node, make_nodes
from coding_framework.graphs.routing import EXECUTE, GENERATE, REVIEW, after_execute, after_review
from coding_framework.graphs.state import EpisodeState


class BatchState(TypedDict, total=False):
    """Input: `episodes`, each an `EpisodeState` input. Output: each episode's final `EpisodeState`."""

    episodes: list[EpisodeState]
    routes: list[str]
    """The node each episode goes to next (`__end__` once it stopped)."""


def _reducers() -> dict[str, tuple[Callable[[Any, Any], Any], Callable[[], Any]]]:
    """(reducer, empty value) of each `EpisodeState` key annotated with one, as LangGraph applies them."""
    out = {}
    for key, hint in typing.get_type_hints(EpisodeState, include_extras=True).items():
        if typing.get_origin(hint) is typing.Annotated:
            base, reducer = typing.get_args(hint)[:2]
            out[key] = (reducer, typing.get_origin(base) or base)
    return out


REDUCERS = _reducers()


def start_episode(inputs: EpisodeState) -> EpisodeState:
    """``inputs`` with every reducer key it lacks at its empty value."""
    return typing.cast(EpisodeState, {**{k: empty() for k, (_, empty) in REDUCERS.items()}, **inputs})


def apply_update(episode: EpisodeState, update: dict[str, Any]) -> EpisodeState:
    """A node's partial update merged into one episode: reducer keys reduce, the others are replaced."""
    merged: dict[str, Any] = dict(episode)
    for key, value in update.items():
        reducer = REDUCERS.get(key)
        merged[key] = reducer[0](merged[key], value) if reducer and key in merged else value
    return typing.cast(EpisodeState, merged)


def _next(node: str, episode: EpisodeState, config: GraphConfig) -> str:
    if node == EXECUTE:
        return after_execute(episode, config)
    if node == REVIEW:
        return after_review(episode)
    return EXECUTE if node == GENERATE else GENERATE


def _batched(node: str, step: Node, config: GraphConfig) -> Callable[[BatchState], Awaitable[dict[str, Any]]]:
    is_async = inspect.iscoroutinefunction(step)

    async def run(state: BatchState) -> dict[str, Any]:
        if "routes" in state:
            episodes, routes = list(state["episodes"]), list(state["routes"])
        else:  # the batch's first step: every episode starts at `generate`
            episodes, routes = (
                [start_episode(e) for e in state["episodes"]],
                [GENERATE] * len(state["episodes"]),
            )
        due = [i for i, route in enumerate(routes) if route == node]
        if is_async:
            detached = contextvars.copy_context()
            detached.run(var_child_runnable_config.set, None)
            coros = [typing.cast(Coroutine[Any, Any, dict[str, Any]], step(episodes[i])) for i in due]
            updates = await gather_eagerly(coros, detached)
        else:
            updates = [typing.cast(dict[str, Any], step(episodes[i])) for i in due]
        for i, update in zip(due, updates, strict=True):
            episodes[i] = apply_update(episodes[i], update)
            routes[i] = _next(node, episodes[i], config)
        return {"episodes": episodes, "routes": routes}

    return run


def _route(state: BatchState) -> str:
    pending = {r for r in state["routes"] if r != END}
    if len(pending) > 1:  # cannot happen: every node has one successor besides END
        raise RuntimeError(f"episodes of one batch diverged to {sorted(pending)}")
    return pending.pop() if pending else END


def build_batched_graph(
    agents: Agents, config: GraphConfig, *, checkpointer: BaseCheckpointSaver | None = None
) -> CompiledStateGraph:
    """The workflow of `build_graph` over a batch: invoke with ``{"episodes": [input, ...]}``."""
    config = routing_config(agents, config)
    nodes = {name: _batched(name, step, config) for name, step in make_nodes(agents, config).items()}
    graph = StateGraph(BatchState)
    add_workflow(graph, nodes, agents.reviewer is not None, _route, _route)
    compiled = graph.compile(checkpointer=checkpointer, name="coding_batched")
    return compiled.with_config(recursion_limit=recursion_limit(config))
