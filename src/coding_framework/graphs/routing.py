"""Routing of the workflow graph: pure functions of the state and the `GraphConfig`."""

from __future__ import annotations

from typing import cast

from langgraph.graph import END

from coding_framework.config.graph import GraphConfig
from coding_framework.graphs.state import EpisodeState, StopReason

GENERATE, EXECUTE, REVIEW, REVISE = "generate", "execute", "review", "revise"


def stop_reason(status: str, rounds: int, tokens_used: int, config: GraphConfig) -> StopReason | None:
    """Why the episode stops after a draft with Executor ``status``, or None to keep going.

    A pass wins over exhausted budgets. A testless problem stops at its first draft that runs cleanly
    (``untested``): there is no failure left for a revision to fix.
    """
    if status in ("passed", "untested"):
        return cast(StopReason, status)
    if rounds >= config.max_rounds:
        return "max_rounds"
    if config.max_tokens is not None and tokens_used >= config.max_tokens:
        return "token_budget"
    return None


def after_execute(state: EpisodeState, config: GraphConfig) -> str:
    """The node after `execute`: `review`, `revise` or END.

    An episode that goes on is reviewed before its revision (``review: never`` revises at once). One that
    stops ends, except that ``review: always`` first reviews a passing (or untested) final draft.
    """
    reason = state.get("stop_reason")
    if reason is None:
        return REVISE if config.review == "never" else REVIEW
    return REVIEW if reason in ("passed", "untested") and config.review == "always" else END


def after_review(state: EpisodeState) -> str:
    """The node after `review`: `revise`, or END when the review's own tokens exhausted the budget."""
    return END if state.get("stop_reason") else REVISE
