"""The workflow state: a TypedDict of plain JSON values, each accumulating key's reducer in its annotation.

Plain values keep checkpoints portable (SQLite, the `langgraph dev` HTTP API) and let any process
read a finished episode without importing our classes.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal, TypedDict

StopReason = Literal["passed", "untested", "max_rounds", "token_budget"]


class RoundRecord(TypedDict, total=False):
    """One round. `execute` writes the verdict, `review` adds `review`, `revise` sets the final `feedback`."""

    round: int
    answer: str
    """The Generator's raw answer."""
    code: str
    passed: bool
    status: str
    has_tests: bool
    tests_passed: int
    tests_total: int
    failures: list[str]
    execution: str
    """The Executor's feedback."""
    review: str
    feedback: str
    """What the Generator is told about this round: the Executor's feedback, plus the review when revising."""


def merge_rounds(left: list[RoundRecord], right: list[RoundRecord]) -> list[RoundRecord]:
    """Reducer: a record for a round already present updates it; a record for a new round is appended."""
    merged = list(left)
    index = {r["round"]: i for i, r in enumerate(merged)}
    for record in right:
        at = index.get(record["round"])
        if at is None:
            index[record["round"]] = len(merged)
            merged.append(record)
        else:
            merged[at] = {**merged[at], **record}
    return merged


class EpisodeState(TypedDict, total=False):
    """One episode of generate -> execute -> review -> revise.

    Input: `problem` (a `Problem` as a dict) or `text` (a free-text request: it has no tests, so the
    episode never passes and stops, `untested`, at the first draft that runs cleanly). Output: `code`,
    `passed`, `stop_reason` and one record per round in `rounds`.
    """

    problem: dict[str, Any]
    text: str
    seed: int
    """Input, optional: the episode's sampling seed; each round's Generator call derives its own from it."""
    code: str
    passed: bool
    round: int
    """Drafts written so far."""
    stop_reason: StopReason | None
    tokens_used: Annotated[int, operator.add]
    """Prompt + completion tokens of every LLM call in this episode (the token budget counts these)."""
    rounds: Annotated[list[RoundRecord], merge_rounds]
    calls: Annotated[list[dict[str, Any]], operator.add]
    """Training graph: the record of every Generator call in order (`llm.session.CallRecord` as a dict)."""
    review_calls: Annotated[list[dict[str, Any]], operator.add]
    """Training graph, LLM Reviewer on the Generator's engine: the record of every review call, its `turn`
    the index of the round it reviews (round - 1). Each review is its own single-turn conversation."""
    trajectory: dict[str, list[Any]]
    """Training graph: the Generator's TokenSession after its last call: `ids`, `loss_mask`, `logprobs`."""
