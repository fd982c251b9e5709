from __future__ import annotations

import pytest

from coding_framework.config.graph import WorkflowConfig
from coding_framework.graphs import build_inference_graph, build_training_graph
from coding_framework.graphs.checkpoint import resume, sqlite_checkpointer, thread
from coding_framework.llm.base import SamplingParams
from coding_framework.llm.session import TokenSession
from coding_framework.problems import Problem
from coding_framework.problems.prompts import generation_messages, revision_messages
from coding_framework.testing.chat import ScriptedChatModel, fenced
from coding_framework.testing.engine import ScriptedEngine
from coding_framework.testing.grader import InProcessGrader

WRONG = fenced("def add(a, b):\n    return a - b")
RIGHT = fenced("def add(a, b):\n    return a + b")


def _one_session(problem: Problem, feedback: str) -> TokenSession:
    """What the episode's Generator session must be: built in one go, never re-tokenized."""
    engine = ScriptedEngine([WRONG, RIGHT])
    session = TokenSession(engine.tokenizer)
    session.add_messages(generation_messages(problem))
    session.generate(engine, SamplingParams())
    session.add_messages(revision_messages(problem, "", feedback))
    session.generate(engine, SamplingParams())
    return session


async def test_training_episode_keeps_token_exact_records(add_problem) -> None:
    graph = build_training_graph(
        WorkflowConfig(), grader=InProcessGrader(), engine=ScriptedEngine([WRONG, RIGHT])
    )
    out = await graph.ainvoke({"problem": add_problem.model_dump()})
    assert out["passed"] and out["round"] == 2
    first, second = out["calls"]
    assert (first["turn"], second["turn"]) == (0, 1)
    assert first["text"] == out["rounds"][0]["answer"]
    expected = _one_session(add_problem, out["rounds"][0]["feedback"])
    assert out["trajectory"] == {
        "ids": expected.ids,
        "loss_mask": expected.loss_mask,
        "logprobs": expected.logprobs,
    }
    assert second["prompt_ids"] == expected.calls[1].prompt_ids
    assert out["tokens_used"] == sum(len(c["prompt_ids"]) + len(c["response_ids"]) for c in out["calls"])


async def test_training_and_inference_graphs_share_the_topology() -> None:
    training = build_training_graph(WorkflowConfig(), grader=InProcessGrader(), engine=ScriptedEngine())
    inference = build_inference_graph(
        WorkflowConfig(), grader=InProcessGrader(), chat_model=ScriptedChatModel()
    )
    t, i = training.get_graph(), inference.get_graph()
    assert set(t.nodes) == set(i.nodes) == {"__start__", "generate", "execute", "review", "revise", "__end__"}
    assert {(e.source, e.target, e.conditional) for e in t.edges} == {
        (e.source, e.target, e.conditional) for e in i.edges
    }


async def test_resumed_training_episode_continues_the_same_token_sequence(tmp_path, add_problem) -> None:
    db = tmp_path / "ckpt.sqlite"
    async with sqlite_checkpointer(db) as saver:
        graph = build_training_graph(
            WorkflowConfig(), grader=InProcessGrader(), engine=ScriptedEngine([WRONG]), checkpointer=saver
        )
        with pytest.raises(IndexError):  # the scripted engine has no second answer: the run dies in round 2
            await graph.ainvoke({"problem": add_problem.model_dump()}, thread("t"))
    async with sqlite_checkpointer(db) as saver:
        graph = build_training_graph(
            WorkflowConfig(), grader=InProcessGrader(), engine=ScriptedEngine([RIGHT]), checkpointer=saver
        )
        out = await resume(graph, "t")
    expected = _one_session(add_problem, out["rounds"][0]["feedback"])
    assert out["passed"]
    assert out["trajectory"]["ids"] == expected.ids
    assert out["trajectory"]["loss_mask"] == expected.loss_mask
