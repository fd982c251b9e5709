"""The repository graph: the agent's turns, its stops, and token-exact trajectories across tool turns."""

from __future__ import annotations

import asyncio

import pytest

from coding_framework.agents.repository import RepositoryAgent
from coding_framework.agents.tool_calls import render_call
from coding_framework.config.repository import RepositoryConfig
from coding_framework.grading import Grader
from coding_framework.graphs.repository import build_repository_graph, tool_counts
from coding_framework.testing.chat import ScriptedChatModel
from coding_framework.testing.engine import ScriptedEngine
from coding_framework.testing.repository import calc_task, gold
from coding_framework.training.trajectory import trajectories_from_episode
from coding_framework.workspace import ToolCall


@pytest.fixture(scope="module")
def grader():
    with Grader() as g:
        yield g


def _run(graph, task=None, **extra):
    task = task or calc_task()
    return asyncio.run(graph.ainvoke({"task": task.model_dump(), **extra}))


def test_an_unparseable_answer_is_counted_and_the_episode_goes_on(grader):
    task = calc_task()
    answers = ["The bug is in add.", *(render_call(c, "json") for c in gold(task))]
    agent = RepositoryAgent(chat_model=ScriptedChatModel(answers=answers))
    state = _run(build_repository_graph(agent, grader), task)
    first = state["exchanges"][0]
    assert first["tool"] is None and "no tool call found" in first["parse_error"]
    assert "error: no tool call found" in state["exchanges"][0]["observation"][0]["content"]
    assert tool_counts(state["exchanges"]) == {"parse_error": 1, "list_files": 1, "write_file": 1,
                                               "run_tests": 1, "finish": 1}
    assert state["passed"] and state["stop_reason"] == "finished"


def test_the_turn_and_token_budgets_end_an_episode(grader):
    reads = [render_call(ToolCall("read_file", {"path": "calc/ops.py"}), "json")] * 10
    agent = RepositoryAgent(RepositoryConfig(max_turns=3), chat_model=ScriptedChatModel(answers=reads))
    state = _run(build_repository_graph(agent, grader))
    assert (len(state["exchanges"]), state["stop_reason"], state["passed"]) == (3, "max_turns", False)
    tight = RepositoryConfig(max_tokens=600, output_chars=200)
    agent = RepositoryAgent(tight, chat_model=ScriptedChatModel(answers=reads))
    state = _run(build_repository_graph(agent, grader))
    assert state["stop_reason"] == "token_budget" and len(state["exchanges"]) < 10


def test_training_trajectories_are_token_exact_across_tool_turns(grader):
    task = calc_task()
    answers = [render_call(c, "json") for c in gold(task)]
    engine = ScriptedEngine(answers=answers)
    agent = RepositoryAgent(RepositoryConfig(sampling={"max_new_tokens": 512}), engine=engine)
    state = _run(build_repository_graph(agent, grader), task)
    assert state["passed"] and len(state["calls"]) == len(answers)
    (row,) = trajectories_from_episode(state, ["generator"], reward=state["verdict"]["reward"])
    ids = row.prompt_ids + row.response_ids
    generated = [i for i, m in zip(row.response_ids, row.response_mask, strict=True) if m]
    assert generated == [t for call in state["calls"] for t in call["response_ids"]]
    # Every call saw exactly the ids before it: the tool observations are prompt tokens of the next turn.
    for call in state["calls"]:
        assert ids[: len(call["prompt_ids"])] == call["prompt_ids"]
    spans = {i for span in row.calls for i in range(span.start, span.end)}
    assert [i for i, m in enumerate(row.response_mask) if m] == sorted(spans)
    between = [t for i, t in enumerate(row.response_ids) if i not in spans]
    assert "1 passed, 0 failed" in engine.tokenizer.decode(between)  # the run_tests observation, mask 0
    assert row.reward == 1.0 and sum(row.response_mask) == len(generated)
