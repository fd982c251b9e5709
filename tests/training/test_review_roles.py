"""The Reviewer as a trained role: token-exact review calls in the training graph, rows with their own credit,
and the review usefulness rate in the rollout metrics and in held-out evaluation."""

from __future__ import annotations

from typing import Any

from coding_framework.agents.reviewer import review_messages
from coding_framework.config.agents import AgentsConfig, ReviewerConfig
from coding_framework.config.graph import GraphConfig, WorkflowConfig
from coding_framework.config.review_credit import ReviewCreditConfig
from coding_framework.evaluation.episodes import review_usefulness
from coding_framework.graphs import build_training_graph
from coding_framework.graphs.nodes import execution_of
from coding_framework.llm.session import TokenSession
from coding_framework.rewards import RewardOutput
from coding_framework.testing.engine import ScriptedEngine
from coding_framework.testing.grader import InProcessGrader
from coding_framework.training.rollouts.episodes import Episode
from coding_framework.training.rollouts.scoring import review_metrics, to_trajectories
from tests.training._episodes import ADD, RIGHT, WRONG

HALF = "```python\ndef add(a, b):\n    return a + b if a > 1 else 0\n```"
REVIEW = "- subtracts instead of adding"


def _workflow(max_rounds: int = 2) -> WorkflowConfig:
    return WorkflowConfig(
        agents=AgentsConfig(reviewer=ReviewerConfig(backend="llm")),
        graph=GraphConfig(max_rounds=max_rounds, review="on_failure"),
    )


async def _episode(answers: list[str], index: int = 0, max_rounds: int = 2) -> Episode:
    graph = build_training_graph(_workflow(max_rounds), grader=InProcessGrader(),
                                 engine=ScriptedEngine(answers))
    state = await graph.ainvoke({"problem": ADD.model_dump()})
    reward = RewardOutput(value=float(state["passed"]), raw=float(state["passed"]))
    return Episode(index=index, group=0, problem=ADD, state=state, reward=reward, passed=state["passed"])


async def test_an_llm_review_on_the_generators_engine_is_recorded_token_exactly() -> None:
    episode = await _episode([WRONG, REVIEW, RIGHT])
    state: dict[str, Any] = episode.state
    assert state["passed"] and state["rounds"][0]["review"] == REVIEW
    (call,) = state["review_calls"]
    assert (call["role"], call["turn"], call["text"]) == ("reviewer", 0, REVIEW)
    assert [c["role"] for c in state["calls"]] == ["generator", "generator"]
    assert REVIEW in state["rounds"][0]["feedback"]  # the Generator read the review before revising
    session = TokenSession(ScriptedEngine().tokenizer)
    session.add_messages(review_messages(ADD, state["rounds"][0]["code"], execution_of(state["rounds"][0])))
    session.add_generation_prompt()
    assert call["prompt_ids"] == session.ids  # the request as rendered once, never re-tokenized


async def test_each_role_gets_rows_with_its_own_credit() -> None:
    fixed = await _episode([WRONG, REVIEW, RIGHT], index=0)
    approved = await _episode([WRONG, "LGTM", WRONG], index=1)
    rows = to_trajectories([fixed, approved], [1.0, 0.0], ["generator", "reviewer"], step=3,
                           review=ReviewCreditConfig())
    generators = [r for r in rows if r.role == "generator"]
    reviewers = [r for r in rows if r.role == "reviewer"]
    assert [r.reward for r in generators] == [1.0, 0.0]
    assert {r.group_id for r in generators} == {"3/0"}
    assert [r.reward for r in reviewers] == [1.0, -1.0]  # led to a fix; approved failing code
    assert {r.group_id for r in reviewers} == {"3/0/reviewer"}
    review_row = reviewers[0]
    call = fixed.state["review_calls"][0]
    assert review_row.prompt_ids == call["prompt_ids"] and review_row.response_ids == call["response_ids"]
    assert review_row.num_generated == len(call["response_ids"]) and review_row.calls[0].text == REVIEW
    only_generator = to_trajectories([fixed, approved], [1.0, 0.0], ["generator"], step=3)
    assert [r.role for r in only_generator] == ["generator", "generator"]


async def test_the_usefulness_rate_is_reported_in_training_and_evaluation() -> None:
    episodes = [
        await _episode([WRONG, REVIEW, RIGHT], index=0),  # useful
        await _episode([WRONG, REVIEW, HALF], index=1),  # 0 -> 2 of 3 tests: useful, not fixed
        await _episode([WRONG, "LGTM", WRONG], index=2),  # not useful, approved failing code
        await _episode([RIGHT], index=3),  # passed at once: nothing reviewed
    ]
    metrics = review_metrics(episodes, ReviewCreditConfig())
    assert metrics["review/usefulness_rate"] == 2 / 3 and metrics["review/judged"] == 3.0
    assert metrics["review/approved_failing_share"] == 1 / 3
    assert review_usefulness([e.state for e in episodes]) == (2 / 3, 3)
    assert review_metrics(episodes[3:], ReviewCreditConfig()) == {}
