"""Evaluation: the pass@k estimator, the one grade-and-score path every evaluation uses, samples files."""

from coding_framework.evaluation.episodes import (
    Scores,
    agrade,
    family,
    grade,
    pass_at_k_by_task,
    repeat,
    score,
)
from coding_framework.evaluation.passk import pass_at_k, summarize

__all__ = [
    "Scores",
    "agrade",
    "family",
    "grade",
    "pass_at_k",
    "pass_at_k_by_task",
    "repeat",
    "score",
    "summarize",
]
