"""The Reviewer's credit: rewards for reviews that lead to fixes, computed from an episode's graded rounds.

An episode's rounds (``graphs.state.RoundRecord`` as plain dicts) hold each draft's grader verdict
(``passed``, ``tests_passed``) and the review written after it. A review of a failing draft is *useful*
when the revision that follows passes more tests than the draft did; the review usefulness rate is the share
of such reviews among those a revision followed. The verdict of a review (approve or flag) is read off its
text by fixed prefixes, so every component comes from the grader and the episode, never from an LLM judge.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from coding_framework.config.review_credit import ReviewCreditConfig

__all__ = ["ReviewOutcome", "Verdict", "review_outcomes", "review_verdict", "usefulness_rate"]

Verdict = Literal["approve", "flag"]


def review_verdict(text: str, markers: Sequence[str]) -> Verdict:
    """``approve`` when the review, lowercased, without leading space and bullets, starts with a marker."""
    head = text.strip().lstrip("-*> ").lower()
    return "approve" if any(head.startswith(m) for m in markers) else "flag"


@dataclass(frozen=True)
class ReviewOutcome:
    """One review and what followed it. ``revision_tests`` is None when no revision followed (the episode
    stopped: the draft passed, or the round or token budget ran out)."""

    round: int
    verdict: Verdict
    draft_passed: bool
    draft_tests: int
    revision_tests: int | None
    revision_passed: bool | None
    reward: float

    @property
    def useful(self) -> bool | None:
        """Whether the next draft improved on a failing one; None where that cannot be told."""
        if self.draft_passed or self.revision_tests is None:
            return None
        return self.revision_tests > self.draft_tests


def _reward(draft: Mapping[str, Any], verdict: Verdict, revision: Mapping[str, Any] | None,
            config: ReviewCreditConfig) -> float:
    if draft.get("passed"):
        return config.flagged_passing if verdict == "flag" else 0.0
    value = config.approved_failing if verdict == "approve" else 0.0
    if revision is not None:
        before, after = int(draft.get("tests_passed", 0)), int(revision.get("tests_passed", 0))
        if after > before:
            value += config.improved + (config.fixed if revision.get("passed") else 0.0)
        elif after < before:
            value += config.regressed
    return value


def review_outcomes(rounds: Sequence[Mapping[str, Any]], config: ReviewCreditConfig) -> list[ReviewOutcome]:
    """The outcome and reward of every review in an episode's ``rounds``, in round order.

    Rounds without tests earn nothing and are skipped: the grader has no verdict to credit a review by.
    A revision that has not been graded (no ``tests_passed`` yet) counts as no revision.
    """
    by_round = {int(r["round"]): r for r in rounds}
    outcomes = []
    for number, draft in sorted(by_round.items()):
        text = draft.get("review")
        if text is None or not draft.get("has_tests"):
            continue
        verdict = review_verdict(text, config.approve_markers)
        revision = by_round.get(number + 1)
        if revision is not None and "tests_passed" not in revision:
            revision = None
        outcomes.append(ReviewOutcome(
            round=number,
            verdict=verdict,
            draft_passed=bool(draft.get("passed")),
            draft_tests=int(draft.get("tests_passed", 0)),
            revision_tests=None if revision is None else int(revision["tests_passed"]),
            revision_passed=None if revision is None else bool(revision.get("passed")),
            reward=_reward(draft, verdict, revision, config),
        ))
    return outcomes


def usefulness_rate(outcomes: Iterable[ReviewOutcome]) -> tuple[float | None, int]:
    """(share of reviews of failing drafts after which the next draft passed more tests, how many such
    reviews a revision followed); the share is None when there were none."""
    judged = [o.useful for o in outcomes if o.useful is not None]
    return (sum(judged) / len(judged) if judged else None), len(judged)
