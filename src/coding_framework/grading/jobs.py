"""The sandbox's unit of work for a problem and a program, in either trust tier."""

from __future__ import annotations

from coding_framework.config.sandbox import ResourceLimits
from coding_framework.grading.tiers import tier_of
from coding_framework.problems.problem import Problem
from coding_framework.sandbox import Job
from coding_framework.sandbox.inprocess import UnittestTask


def job_for(problem: Problem, program: str, limits: ResourceLimits | None = None) -> Job:
    """The sandbox job under ``limits`` (None: the sandbox's own); a problem's own ``timeout_s``
    (CodeContests, EvalPlus) replaces the wall-clock budget."""
    if tier_of(problem) == "in_process":
        raise ValueError(f"{problem.task_id} has unittest tests: the in-process tier runs them, not a Job")
    if problem.timeout_s is not None:
        own = {"timeout_s": problem.timeout_s, "cpu_s": None}
        limits = (limits or ResourceLimits()).model_copy(update=own)
    return Job(
        program=program,
        test_code=problem.test_code,
        entry_point=problem.entry_point,
        test_format=problem.test_format,
        prelude=problem.prelude,
        limits=limits,
    )


def unittest_task_for(problem: Problem, program: str) -> UnittestTask:
    return UnittestTask(solution=program, test_code=problem.test_code, code_prompt=problem.code_prompt)


__all__ = ["job_for", "unittest_task_for"]
