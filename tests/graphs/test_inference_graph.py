from __future__ import annotations

import asyncio

import pytest

from coding_framework.agents.factory import build_agents
from coding_framework.config.agents import AgentsConfig, ReviewerConfig
from coding_framework.config.graph import GraphConfig, WorkflowConfig
from coding_framework.graphs import build_graph, build_inference_graph
from coding_framework.testing.chat import ScriptedChatModel, fenced
from coding_framework.testing.grader import InProcessGrader

WRONG = fenced("def add(a, b):\n    return a - b")
RIGHT = fenced("def add(a, b):\n    return a + b")


def _graph(answers, *, review="on_failure", reviewer="static", reviewer_answers=(), **graph_kw):
    config = WorkflowConfig(
        agents=AgentsConfig(reviewer=ReviewerConfig(backend=reviewer)),
        graph=GraphConfig(review=review, **graph_kw),
    )
    model = ScriptedChatModel(answers=list(answers))
    reviewer_model = ScriptedChatModel(answers=list(reviewer_answers))
    graph = build_inference_graph(
        config, grader=InProcessGrader(), chat_model=model, reviewer_model=reviewer_model
    )
    return graph, model, reviewer_model


async def test_failing_draft_is_revised_with_feedback_until_it_passes(add_problem) -> None:
    graph, model, _ = _graph([WRONG, RIGHT])
    out = await graph.ainvoke({"problem": add_problem.model_dump()})
    assert out["passed"] is True
    assert out["stop_reason"] == "passed"
    assert out["round"] == 2 and len(out["rounds"]) == 2
    assert out["code"] == "def add(a, b):\n    return a + b\n"
    first, second = out["rounds"]
    assert first["tests_passed"] == 0 and first["tests_total"] == 3
    assert first["review"].startswith("Static review:")
    assert first["feedback"] == f"{first['execution']}\n\n{first['review']}"
    assert second["feedback"] == "All 3 tests passed." and "review" not in second
    # The revision request quotes the first round's feedback after the first answer.
    revision_prompt = model.calls[1]
    assert revision_prompt[2].content == WRONG
    assert first["execution"] in revision_prompt[3].content
    assert out["tokens_used"] == sum(
        m.usage_metadata["total_tokens"]
        for m in [
            await ScriptedChatModel(answers=[WRONG]).ainvoke(model.calls[0]),
            await ScriptedChatModel(answers=[RIGHT]).ainvoke(model.calls[1]),
        ]
    )


async def test_round_budget_stops_a_hopeless_episode(add_problem) -> None:
    graph, model, _ = _graph([WRONG] * 5, max_rounds=2)
    out = await graph.ainvoke({"problem": add_problem.model_dump()})
    assert (out["passed"], out["stop_reason"], out["round"], len(model.calls)) == (False, "max_rounds", 2, 2)
    assert len(out["rounds"]) == 2


async def test_token_budget_stops_before_the_next_draft(add_problem) -> None:
    graph, model, _ = _graph([WRONG] * 5, max_rounds=5, max_tokens=30)
    out = await graph.ainvoke({"problem": add_problem.model_dump()})
    assert out["stop_reason"] == "token_budget"
    assert len(model.calls) == 1 and out["tokens_used"] >= 30


async def test_llm_review_tokens_count_against_the_budget(add_problem) -> None:
    probe, _, _ = _graph([WRONG], max_rounds=1, reviewer="none")
    generation_tokens = (await probe.ainvoke({"problem": add_problem.model_dump()}))["tokens_used"]
    graph, model, reviewer = _graph(
        [WRONG] * 3,
        reviewer="llm",
        reviewer_answers=["- it subtracts"] * 3,
        max_rounds=3,
        max_tokens=generation_tokens + 1,
    )
    out = await graph.ainvoke({"problem": add_problem.model_dump()})
    assert out["stop_reason"] == "token_budget"
    assert len(model.calls) == 1 and len(reviewer.calls) == 1
    assert out["rounds"][0]["review"] == "- it subtracts"


async def test_review_never_skips_the_reviewer(add_problem) -> None:
    graph, _, reviewer = _graph([WRONG, RIGHT], review="never", reviewer="llm")
    out = await graph.ainvoke({"problem": add_problem.model_dump()})
    assert out["passed"] and reviewer.calls == []
    assert out["rounds"][0]["feedback"] == out["rounds"][0]["execution"]


async def test_review_always_reviews_the_passing_draft_too(add_problem) -> None:
    graph, _, reviewer = _graph([RIGHT], review="always", reviewer="llm", reviewer_answers=["- looks right"])
    out = await graph.ainvoke({"problem": add_problem.model_dump()})
    assert out["passed"] and len(reviewer.calls) == 1
    assert out["rounds"][0]["review"] == "- looks right"


async def test_free_text_problem_runs_but_never_passes() -> None:
    graph, model, _ = _graph([fenced("def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)")])
    out = await graph.ainvoke({"text": "Write a function fib(n) returning the n-th Fibonacci number."})
    assert out["passed"] is False
    assert out["stop_reason"] == "untested"
    assert out["problem"]["entry_point"] == "fib"
    assert "no tests" in out["rounds"][0]["feedback"]
    assert len(model.calls) == 1


async def test_free_text_code_that_crashes_is_revised() -> None:
    broken, fixed = fenced("def fib(n):\n    return n\nfib(None + 1)"), fenced("def fib(n):\n    return n")
    graph, _, _ = _graph([broken, fixed], review="never")
    out = await graph.ainvoke({"text": "Write a function fib(n)."})
    assert [r["status"] for r in out["rounds"]] == ["error", "untested"]
    assert "TypeError" in out["rounds"][0]["feedback"]
    assert out["passed"] is False


async def test_missing_input_is_a_clear_error() -> None:
    graph, _, _ = _graph([RIGHT])
    with pytest.raises(ValueError, match="needs `problem`"):
        await graph.ainvoke({})


class _BarrierGrader(InProcessGrader):
    """Holds every grading call until ``n`` are in flight at once, proving episodes overlap."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n, self.in_flight, self.peak = n, 0, 0
        self.all_in = asyncio.Event()

    async def agrade(self, problem, program):
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        if self.in_flight == self.n:
            self.all_in.set()
        await asyncio.wait_for(self.all_in.wait(), timeout=10)
        self.in_flight -= 1
        return self.grade(problem, program)


async def test_many_episodes_run_concurrently_without_blocking_the_loop(add_problem) -> None:
    n = 12
    grader = _BarrierGrader(n)
    model = ScriptedChatModel(respond=lambda messages: RIGHT)
    agents = build_agents(AgentsConfig(), grader, chat_model=model)
    graph = build_graph(agents, GraphConfig())
    outs = await asyncio.gather(*(graph.ainvoke({"problem": add_problem.model_dump()}) for _ in range(n)))
    assert grader.peak == n
    assert all(o["passed"] for o in outs)
