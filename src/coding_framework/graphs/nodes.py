"""The graph's nodes: each reads the state, calls one agent and returns a partial update."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from coding_framework.agents.factory import Agents
from coding_framework.agents.freeform import problem_from_text
from coding_framework.agents.generator import Attempt
from coding_framework.agents.types import Execution
from coding_framework.config.graph import GraphConfig
from coding_framework.graphs.routing import stop_reason
from coding_framework.graphs.state import EpisodeState, RoundRecord
from coding_framework.problems import Problem

Node = Callable[[EpisodeState], Awaitable[dict[str, Any]] | dict[str, Any]]


def problem_of(state: EpisodeState) -> Problem:
    if state.get("problem"):
        return Problem.model_validate(state["problem"])
    if state.get("text"):
        return problem_from_text(state["text"])
    raise ValueError(
        "an episode needs `problem` (a Problem as a dict) or `text` (a free-text request) as input"
    )


class ProblemCache:
    """Validated problems by task id, so an episode's problem is validated once rather than at every node.

    A hit must hold the same (or an equal) dict, so a changed problem is validated again.
    """

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._entries: dict[Any, tuple[dict[str, Any], Problem]] = {}

    def __call__(self, state: EpisodeState) -> Problem:
        data = state.get("problem")
        if not data:
            return problem_of(state)
        hit = self._entries.get(data.get("task_id"))
        if hit is not None and (hit[0] is data or hit[0] == data):
            return hit[1]
        problem = Problem.model_validate(data)
        if len(self._entries) >= self._size:
            self._entries.pop(next(iter(self._entries)))
        self._entries[problem.task_id] = (data, problem)
        return problem


def history_of(state: EpisodeState) -> list[Attempt]:
    return [Attempt(r["answer"], r["code"], r["feedback"]) for r in state.get("rounds", [])]


def execution_of(record: RoundRecord) -> Execution:
    return Execution(
        passed=record["passed"],
        status=record["status"],
        has_tests=record["has_tests"],
        tests_passed=record["tests_passed"],
        tests_total=record["tests_total"],
        feedback=record["execution"],
        failures=record["failures"],
    )


def execution_record(round_no: int, ex: Execution) -> RoundRecord:
    """Round ``round_no``'s record of what the Executor found (the inverse of ``execution_of``)."""
    return {
        "round": round_no,
        "passed": ex.passed,
        "status": ex.status,
        "has_tests": ex.has_tests,
        "tests_passed": ex.tests_passed,
        "tests_total": ex.tests_total,
        "failures": ex.failures,
        "execution": ex.feedback,
        "feedback": ex.feedback,
    }


def compose_feedback(record: RoundRecord) -> str:
    review = record.get("review")
    return f"{record['execution']}\n\n{review}" if review else record["execution"]


def make_nodes(agents: Agents, config: GraphConfig) -> dict[str, Node]:
    """The four nodes, closed over the agents and the routing config."""
    resolve = ProblemCache()

    async def generate(state: EpisodeState) -> dict[str, Any]:
        problem = resolve(state)
        draft = await agents.generator.adraft(
            problem, history_of(state), state.get("calls", []), seed=state.get("seed")
        )
        n = state.get("round", 0) + 1
        update: dict[str, Any] = {
            "code": draft.code,
            "round": n,
            "tokens_used": draft.tokens,
            "rounds": [{"round": n, "answer": draft.text, "code": draft.code,
                        "completion_tokens": draft.completion_tokens}],
        }
        if not state.get("problem"):
            update["problem"] = problem.model_dump()
        if draft.record is not None:
            update["calls"] = [draft.record]
            update["trajectory"] = draft.trajectory
        return update

    async def execute(state: EpisodeState) -> dict[str, Any]:
        n = state["round"]
        ex = await agents.executor.aexecute(resolve(state), state["code"])
        record = execution_record(n, ex)
        reason = stop_reason(ex.status, n, state.get("tokens_used", 0), config)
        return {"passed": ex.passed, "stop_reason": reason, "rounds": [record]}

    async def review(state: EpisodeState) -> dict[str, Any]:
        assert agents.reviewer is not None, "routing sends episodes to review only when a reviewer exists"
        record = state["rounds"][-1]
        rv = await agents.reviewer.areview(resolve(state), state["code"], execution_of(record))
        update: dict[str, Any] = {"rounds": [{"round": record["round"], "review": rv.text}]}
        if rv.record is not None:
            update["review_calls"] = [{**rv.record, "turn": record["round"] - 1}]
        if rv.tokens:
            update["tokens_used"] = rv.tokens
        if state.get("stop_reason") is None:  # the review's own tokens may exhaust the budget
            update["stop_reason"] = stop_reason(
                record["status"], record["round"], state.get("tokens_used", 0) + rv.tokens, config
            )
        return update

    def revise(state: EpisodeState) -> dict[str, Any]:  # pure: sync, so no task or thread is spent on it
        record = state["rounds"][-1]
        return {"rounds": [{"round": record["round"], "feedback": compose_feedback(record)}]}

    return {"generate": generate, "execute": execute, "review": review, "revise": revise}
