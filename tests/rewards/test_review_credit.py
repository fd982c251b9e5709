"""The Reviewer's credit: each component from the episode's graded rounds, never from a model's judgement."""

from __future__ import annotations

from typing import Any

import pytest

from coding_framework.config.review_credit import ReviewCreditConfig
from coding_framework.rewards.review_credit import review_outcomes, review_verdict, usefulness_rate

CREDIT = ReviewCreditConfig(improved=1.0, fixed=0.25, regressed=-0.5, approved_failing=-1.0,
                            flagged_passing=-0.5)


def _round(n: int, tests: int, total: int = 4, review: str | None = None, **extra: Any) -> dict[str, Any]:
    record = {"round": n, "has_tests": True, "tests_passed": tests, "tests_total": total,
              "passed": tests == total, **extra}
    if review is not None:
        record["review"] = review
    return record


@pytest.mark.parametrize(
    ("text", "verdict"),
    [("LGTM", "approve"), ("  - Looks good to me", "approve"), ("Static review: no lint or complexity "
     "findings.", "approve"), ("- returns a - b: use a + b", "flag"), ("", "flag")],
)
def test_the_verdict_is_read_off_the_text_by_fixed_prefixes(text: str, verdict: str) -> None:
    assert review_verdict(text, CREDIT.approve_markers) == verdict


def test_a_review_earns_credit_when_the_revision_passes_more_tests() -> None:
    (improved,) = review_outcomes([_round(1, 1, review="- off by one"), _round(2, 3)], CREDIT)
    assert (improved.reward, improved.useful, improved.verdict) == (1.0, True, "flag")
    (fixed,) = review_outcomes([_round(1, 1, review="- off by one"), _round(2, 4)], CREDIT)
    assert fixed.reward == 1.25 and fixed.revision_passed
    (same,) = review_outcomes([_round(1, 2, review="- off by one"), _round(2, 2)], CREDIT)
    assert (same.reward, same.useful) == (0.0, False)
    (worse,) = review_outcomes([_round(1, 2, review="- off by one"), _round(2, 0)], CREDIT)
    assert (worse.reward, worse.useful) == (-0.5, False)


def test_approving_failing_code_and_flagging_passing_code_are_penalised() -> None:
    (approved,) = review_outcomes([_round(1, 1, review="LGTM"), _round(2, 1)], CREDIT)
    assert approved.reward == -1.0
    (approved_but_fixed,) = review_outcomes([_round(1, 1, review="LGTM"), _round(2, 4)], CREDIT)
    assert approved_but_fixed.reward == pytest.approx(-1.0 + 1.25)
    (flagged,) = review_outcomes([_round(1, 4, review="- rename x")], CREDIT)
    assert (flagged.reward, flagged.useful) == (-0.5, None)
    (approved_pass,) = review_outcomes([_round(1, 4, review="LGTM")], CREDIT)
    assert approved_pass.reward == 0.0


def test_reviews_without_a_graded_revision_or_tests_are_not_judged() -> None:
    last = review_outcomes([_round(1, 0), _round(2, 1, review="- still wrong")], CREDIT)
    assert [(o.round, o.revision_tests, o.useful) for o in last] == [(2, None, None)]
    ungraded = review_outcomes([_round(1, 0, review="- wrong"), {"round": 2, "answer": "..."}], CREDIT)
    assert ungraded[0].revision_tests is None
    untested = {"round": 1, "has_tests": False, "passed": False, "review": "- wrong"}
    assert review_outcomes([untested, _round(2, 0)], CREDIT) == []


def test_the_usefulness_rate_counts_only_judged_reviews() -> None:
    episodes = [
        [_round(1, 0, review="- a"), _round(2, 2, review="- b"), _round(3, 2)],  # useful, then not
        [_round(1, 1, review="- c")],  # no revision: not judged
        [_round(1, 4, review="- d")],  # a passing draft: not judged
    ]
    outcomes = [o for rounds in episodes for o in review_outcomes(rounds, CREDIT)]
    assert usefulness_rate(outcomes) == (0.5, 2)
    assert usefulness_rate([]) == (None, 0)


def test_markers_must_be_lowercase_prefixes() -> None:
    with pytest.raises(ValueError, match="lowercase"):
        ReviewCreditConfig(approve_markers=["LGTM"])
    with pytest.raises(ValueError, match="less than or equal to 0"):
        ReviewCreditConfig(approved_failing=0.5)
