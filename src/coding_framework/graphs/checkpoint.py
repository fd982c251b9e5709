"""SQLite checkpoints: every superstep of an episode is saved, so a run can be resumed and inspected."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph.state import CompiledStateGraph


@asynccontextmanager
async def sqlite_checkpointer(path: str | Path) -> AsyncIterator[AsyncSqliteSaver]:
    """An async SQLite checkpointer on ``path`` (created with its folder if missing)."""
    db = Path(path).expanduser()
    db.parent.mkdir(parents=True, exist_ok=True)
    async with AsyncSqliteSaver.from_conn_string(str(db)) as saver:
        yield saver


def thread(thread_id: str) -> RunnableConfig:
    """The run config that ties an invocation to one checkpointed episode."""
    return {"configurable": {"thread_id": thread_id}}


async def resume(graph: CompiledStateGraph, thread_id: str) -> dict[str, Any]:
    """Continue an interrupted episode from its last checkpoint (a finished one is returned as is)."""
    snapshot = await graph.aget_state(thread(thread_id))
    if not snapshot.values:
        raise KeyError(f"no checkpoint for thread {thread_id!r}")
    if not snapshot.next:
        return dict(snapshot.values)
    return await graph.ainvoke(None, thread(thread_id))


async def history(graph: CompiledStateGraph, thread_id: str) -> list[dict[str, Any]]:
    """The episode's checkpoints, oldest first: the step, the node(s) due next and the state values."""
    steps = [
        {
            "step": s.metadata.get("step") if s.metadata else None,
            "next": list(s.next),
            "values": dict(s.values),
        }
        async for s in graph.aget_state_history(thread(thread_id))
    ]
    return steps[::-1]
