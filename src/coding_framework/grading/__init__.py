"""Grading programs against problems: shared by rewards (training) and benchmarks (evaluation)."""

from coding_framework.grading.grader import Grader
from coding_framework.grading.jobs import job_for
from coding_framework.grading.limits import LimitLearner
from coding_framework.sandbox import ExecutionResult, TestOutcome

__all__ = ["ExecutionResult", "Grader", "LimitLearner", "TestOutcome", "job_for"]
