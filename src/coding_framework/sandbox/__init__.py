"""Run untrusted Python against trusted tests, isolated, with hack-resistant verdicts."""

from coding_framework.sandbox.backends.base import BackendUnavailable
from coding_framework.sandbox.job import Job
from coding_framework.sandbox.pool import Sandbox
from coding_framework.sandbox.result import ExecutionResult, Status, TestOutcome

__all__ = ["BackendUnavailable", "ExecutionResult", "Job", "Sandbox", "Status", "TestOutcome"]
