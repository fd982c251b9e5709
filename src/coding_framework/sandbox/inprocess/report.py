"""The zygote's report as an :class:`ExecutionResult`, and as the status BigCodeBench's own harness gives.

Every result is labelled ``tier="in_process"``: the tests ran inside the submission's process, the official
harness's trust level, so a submission could have forged its own verdict (docs/trust_tiers.md).
"""

from __future__ import annotations

from typing import Any, Literal

from coding_framework.sandbox.inprocess.worker import ISOLATION
from coding_framework.sandbox.result import ExecutionResult, TestOutcome

OfficialStatus = Literal["pass", "fail", "timeout"]


def from_report(report: dict[str, Any]) -> ExecutionResult:
    """Turn the zygote's report into a result; only a completed run with every test passing passes."""
    tests = [
        TestOutcome(
            index=i,
            source=t["name"],
            passed=bool(t["passed"]),
            error_type=t.get("error_type"),
            message=t.get("message"),
        )
        for i, t in enumerate(report.get("tests") or [])
    ]
    n_passed = sum(t.passed for t in tests)
    common: dict[str, Any] = dict(
        tests=tests,
        tests_passed=n_passed,
        tests_total=len(tests),
        stdout=report.get("stdout", ""),
        stdout_truncated=bool(report.get("stdout_truncated")),
        duration_s=report.get("duration_s", 0.0),
        isolation={**ISOLATION, "process_limit": report.get("process_limit", "none")},
        tier="in_process",
    )
    verdict = _verdict(report, tests, n_passed)
    return ExecutionResult(passed=verdict["status"] == "passed", **verdict, **common)


def _verdict(report: dict[str, Any], tests: list[TestOutcome], n_passed: int) -> dict[str, Any]:
    if report.get("timeout"):
        return dict(status="timeout", timed_out=True, error_type="Timeout", error_message="task time limit")
    if report.get("harness_error"):
        etype, msg = report["harness_error"]
        return dict(status="error", error_type=f"HarnessError.{etype}", error_message=msg)
    error = report.get("error")
    if error and error[0] == "MemoryError":
        return dict(status="memory", memory_exceeded=True, error_type="MemoryError", error_message=error[1])
    if error:
        return dict(status="error", error_type=error[0], error_message=error[1])
    if not report.get("completed"):
        if report.get("signal"):
            detail = f"killed by {report['signal']}"
        elif "exit_code" in report:
            detail = f"exited with code {report['exit_code']} before reporting"
        else:
            detail = "no report from the task process"
        return dict(status="crashed", error_type="ProcessDied", error_message=detail)
    if not tests:
        return dict(status="error", error_type="NoTests", error_message="TestCases holds no tests")
    return dict(status="passed" if n_passed == len(tests) else "failed")


def official_status(result: ExecutionResult) -> OfficialStatus:
    """The status BigCodeBench's ``untrusted_check`` gives the same run.

    It knows three: a process that ended without writing its status (killed, ``os._exit``) counts as a
    timeout there, and a load error or memory error as a failure. A task that took its worker down twice
    (``crashed``) or hung it (``timeout``) is one whose process ended without a status.
    """
    if result.passed:
        return "pass"
    if result.status in ("timeout", "crashed"):
        return "timeout"
    return "fail"


def official_details(result: ExecutionResult) -> dict[str, str]:
    """``untrusted_check``'s details: failing test name to traceback, or ``ALL`` for a load error."""
    if result.status in ("error", "memory") and not result.tests:
        return {"ALL": result.error_message or result.error_type or ""}
    return {t.source: t.message or "" for t in result.tests if not t.passed}


__all__ = ["OfficialStatus", "from_report", "official_details", "official_status"]
