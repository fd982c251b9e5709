from __future__ import annotations

import pytest

from coding_framework.config.graph import WorkflowConfig
from coding_framework.graphs import build_inference_graph
from coding_framework.graphs.checkpoint import history, resume, sqlite_checkpointer, thread
from coding_framework.testing.chat import ScriptedChatModel, fenced
from coding_framework.testing.grader import InProcessGrader

WRONG = fenced("def add(a, b):\n    return a - b")
RIGHT = fenced("def add(a, b):\n    return a + b")


async def test_interrupted_episode_resumes_from_its_sqlite_checkpoint(tmp_path, add_problem) -> None:
    db = tmp_path / "runs" / "checkpoints.sqlite"
    crashing = ScriptedChatModel(answers=[WRONG, RIGHT], fail_on_call=1)
    async with sqlite_checkpointer(db) as saver:
        graph = build_inference_graph(
            WorkflowConfig(), grader=InProcessGrader(), chat_model=crashing, checkpointer=saver
        )
        with pytest.raises(RuntimeError, match="scripted failure on call 1"):
            await graph.ainvoke({"problem": add_problem.model_dump()}, thread("ep-1"))
    assert db.is_file()

    # A fresh process: new graph, new model, same database. Round 1 is not redone.
    fresh = ScriptedChatModel(answers=[RIGHT])
    async with sqlite_checkpointer(db) as saver:
        graph = build_inference_graph(
            WorkflowConfig(), grader=InProcessGrader(), chat_model=fresh, checkpointer=saver
        )
        out = await resume(graph, "ep-1")
        steps = await history(graph, "ep-1")
        assert await resume(graph, "ep-1") == out  # finished: returned as is, nothing re-run
        with pytest.raises(KeyError, match="no checkpoint"):
            await resume(graph, "never-started")
    assert out["passed"] is True and out["round"] == 2
    assert len(crashing.calls) == 1 and len(fresh.calls) == 1
    assert fresh.calls[0][2].content == WRONG  # the resumed prompt replays round 1 from the checkpoint
    nodes = [s["next"] for s in steps]
    assert nodes[1:] == [["generate"], ["execute"], ["review"], ["revise"], ["generate"], ["execute"], []]
    assert steps[-1]["values"]["stop_reason"] == "passed"
