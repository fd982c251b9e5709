"""The Reviewer's own credit and its supervised warm start: weights of grader-computed review rewards.

Every component is computed from the episode's graded rounds (``tests_passed``, ``passed``) and the review's
verdict, which is read off the review's text by fixed markers; nothing here asks an LLM to judge.
"""

from __future__ import annotations

from pydantic import Field, field_validator

from coding_framework.config.loader import StrictModel

__all__ = ["ReviewCreditConfig", "ReviewWarmStartConfig"]


class ReviewCreditConfig(StrictModel):
    """How a review is rewarded (``rewards.review_credit``). A review of a failing draft that a revision
    follows earns `improved` when the revision passes more tests than the draft, and `regressed` (usually
    negative) when it passes fewer. Approving a failing draft costs `approved_failing`; flagging a passing
    one (only reviewed with `graph.review: always`) costs `flagged_passing`. A review is an approval when
    its text, lowercased and stripped, starts with one of `approve_markers`."""

    improved: float = Field(1.0, description="Reward when the revision passes more tests than the draft.")
    fixed: float = Field(
        0.0, description="Extra reward when the revision passes every test (on top of `improved`)."
    )
    regressed: float = Field(-0.5, le=0, description="Reward when the revision passes fewer tests.")
    approved_failing: float = Field(-1.0, le=0, description="Reward for approving a failing draft.")
    flagged_passing: float = Field(-0.5, le=0, description="Reward for flagging a draft that passes.")
    approve_markers: list[str] = Field(
        default_factory=lambda: ["lgtm", "approve", "looks good", "static review: no lint"],
        description="Lowercase prefixes that make a review an approval (the static reviewer's 'no "
        "findings' line included); anything else flags the draft.",
    )

    @field_validator("approve_markers")
    @classmethod
    def _lowercase(cls, markers: list[str]) -> list[str]:
        if not markers or any(not m.strip() or m != m.lower() for m in markers):
            raise ValueError("approve_markers needs at least one non-empty, lowercase prefix")
        return markers


class ReviewWarmStartConfig(StrictModel):
    """Supervised fine-tuning of the Reviewer before RL (``training.review_sft``) on labels the pipeline
    makes itself: reviews of failing drafts, labelled by whether the revision they led to passed more tests.
    Off by default; `enabled` runs it once before the first RL step of a fresh run."""

    enabled: bool = Field(False, description="Run the warm start before RL (never on resume).")
    problems: int = Field(24, ge=1, description="Training problems whose episodes make the dataset.")
    samples: int = Field(4, ge=1, description="Episodes per problem (a draft, a review, a revision).")
    temperature: float = Field(0.8, ge=0, description="Sampling temperature of the drafts.")
    max_new_tokens: int = Field(128, ge=1, description="Most tokens of a draft.")
    epochs: int = Field(2, ge=1, description="Passes over the useful reviews.")
    lr: float = Field(1e-4, gt=0, description="AdamW learning rate of the warm start.")
    micro_batch_size: int = Field(8, ge=1, description="Examples per forward/backward pass.")
    max_review_tokens: int = Field(
        96, ge=1, description="Reviews are cut to this many tokens (the reviewer's own generation budget)."
    )
