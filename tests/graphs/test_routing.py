from __future__ import annotations

import pytest
from langgraph.graph import END

from coding_framework.config.graph import GraphConfig
from coding_framework.graphs.nodes import ProblemCache
from coding_framework.graphs.routing import after_execute, after_review, stop_reason
from coding_framework.graphs.state import merge_rounds


@pytest.mark.parametrize(
    ("status", "rounds", "tokens", "expected"),
    [
        ("passed", 3, 10**6, "passed"),  # a pass wins over exhausted budgets
        ("untested", 1, 0, "untested"),
        ("failed", 3, 0, "max_rounds"),
        ("failed", 1, 100, "token_budget"),
        ("failed", 1, 99, None),
        ("error", 2, 0, None),
    ],
)
def test_stop_reason(status: str, rounds: int, tokens: int, expected: str | None) -> None:
    assert stop_reason(status, rounds, tokens, GraphConfig(max_rounds=3, max_tokens=100)) == expected


def test_no_token_budget_means_unlimited() -> None:
    assert stop_reason("failed", 1, 10**9, GraphConfig(max_tokens=None)) is None


@pytest.mark.parametrize(
    ("policy", "reason", "expected"),
    [
        ("on_failure", None, "review"),
        ("on_failure", "passed", END),
        ("on_failure", "max_rounds", END),
        ("always", None, "review"),
        ("always", "passed", "review"),
        ("always", "untested", "review"),
        ("always", "token_budget", END),
        ("never", None, "revise"),
        ("never", "passed", END),
    ],
)
def test_after_execute(policy: str, reason: str | None, expected: str) -> None:
    assert after_execute({"stop_reason": reason}, GraphConfig(review=policy)) == expected


def test_after_review() -> None:
    assert after_review({"stop_reason": None}) == "revise"
    assert after_review({"stop_reason": "token_budget"}) == END


def test_merge_rounds_updates_by_round_and_appends_new_ones() -> None:
    left = [{"round": 1, "code": "a", "feedback": "x"}]
    merged = merge_rounds(left, [{"round": 1, "feedback": "y"}, {"round": 2, "code": "b"}])
    assert merged == [{"round": 1, "code": "a", "feedback": "y"}, {"round": 2, "code": "b"}]
    assert left == [{"round": 1, "code": "a", "feedback": "x"}]  # reducers must not mutate their input


def test_problem_cache_validates_each_problem_once_and_notices_changes(add_problem) -> None:
    resolve = ProblemCache(size=2)
    data = add_problem.model_dump()
    first = resolve({"problem": data})
    assert first == add_problem
    assert resolve({"problem": data}) is first
    assert resolve({"problem": dict(data)}) is first  # an equal dict is a hit too
    changed = resolve({"problem": {**data, "test_code": "assert add(2, 2) == 4\n"}})
    assert changed is not first and changed.test_code == "assert add(2, 2) == 4\n"
    assert resolve({"text": "Write a function fib(n)."}).entry_point == "fib"
    with pytest.raises(ValueError, match="needs `problem`"):
        resolve({})
