"""The benchmark's batched graph ends every episode exactly as one invocation per episode does."""

from __future__ import annotations

import pytest

from benchmarks.training.orchestration.batched_graph import apply_update, build_batched_graph, start_episode
from coding_framework.agents.factory import build_agents
from coding_framework.config.agents import AgentsConfig, ReviewerConfig
from coding_framework.config.graph import GraphConfig
from coding_framework.graphs import build_graph
from coding_framework.problems import Problem
from coding_framework.testing.chat import ScriptedChatModel, fenced
from coding_framework.testing.grader import InProcessGrader


def _problem(name: str, op: str) -> Problem:
    return Problem(
        task_id=f"t/{name}",
        prompt=f"Write {name}(a, b).",
        entry_point=name,
        prompt_is_code=False,
        test_code=f"assert {name}(6, 3) == 6 {op} 3\n",
    )


PROBLEMS = [_problem("add", "+"), _problem("sub", "-"), _problem("mul", "*")]


def _respond(messages) -> str:
    """add: right at once; sub: right on the first revision; mul: never right; free text: runs."""
    prompt, drafts = messages[1].content, (len(messages) - 2) // 2
    if "fib" in prompt:
        return fenced("def fib(n):\n    return n")
    name = prompt.split("(")[0].split()[-1]
    op = {"add": "+", "sub": "-" if drafts else "+", "mul": "+"}[name]
    return fenced(f"def {name}(a, b):\n    return a {op} b")


INPUTS = [{"problem": p.model_dump()} for p in PROBLEMS] + [{"text": "Write a function fib(n)."}]


@pytest.mark.parametrize("review", ["on_failure", "always", "never"])
async def test_batched_episodes_end_exactly_like_single_episodes(review: str) -> None:
    config = GraphConfig(max_rounds=3, review=review)

    def agents():
        return build_agents(
            AgentsConfig(reviewer=ReviewerConfig(lint_select=["F"])),
            InProcessGrader(),
            chat_model=ScriptedChatModel(respond=_respond),
        )

    single = build_graph(agents(), config)
    expected = [await single.ainvoke(dict(i)) for i in INPUTS]
    out = await build_batched_graph(agents(), config).ainvoke({"episodes": [dict(i) for i in INPUTS]})
    assert out["episodes"] == expected
    assert out["routes"] == ["__end__"] * len(INPUTS)
    assert [e["stop_reason"] for e in expected] == ["passed", "passed", "max_rounds", "untested"]
    assert [e["round"] for e in expected] == [1, 2, 3, 1]


async def test_batched_graph_without_reviewer() -> None:
    agents = build_agents(
        AgentsConfig(reviewer=ReviewerConfig(backend="none")),
        InProcessGrader(),
        chat_model=ScriptedChatModel(respond=_respond),
    )
    out = await build_batched_graph(agents, GraphConfig(max_rounds=2)).ainvoke(
        {"episodes": [dict(i) for i in INPUTS]}
    )
    assert [e["round"] for e in out["episodes"]] == [1, 2, 2, 1]
    assert all("review" not in r for e in out["episodes"] for r in e["rounds"])


def test_updates_merge_with_the_state_reducers() -> None:
    episode = start_episode({"text": "x"})
    assert episode == {"text": "x", "tokens_used": 0, "rounds": [], "calls": [], "review_calls": []}
    episode = apply_update(episode, {"round": 1, "tokens_used": 5, "rounds": [{"round": 1, "code": "a"}]})
    episode = apply_update(episode, {"tokens_used": 2, "rounds": [{"round": 1, "feedback": "f"}], "round": 2})
    assert episode["tokens_used"] == 7 and episode["round"] == 2
    assert episode["rounds"] == [{"round": 1, "code": "a", "feedback": "f"}]
