"""A pool of in-process workers that grades unittest-format tasks (BigCodeBench) concurrently.

Every result is labelled ``tier="in_process"``: the tests ran inside the submission's process, the official
harness's trust level, so a submission could have forged its own verdict (docs/trust_tiers.md).
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

from coding_framework.config.inprocess import InProcessConfig
from coding_framework.logs import get_logger
from coding_framework.sandbox.backends.base import WorkerDied, WorkerTimeout
from coding_framework.sandbox.inprocess.worker import ISOLATION, ZygoteWorker
from coding_framework.sandbox.progress import map_in_order
from coding_framework.sandbox.result import ExecutionResult, TestOutcome

log = get_logger(__name__)
START_TIMEOUT_S = 60.0
HOST_GRACE_S = 10.0
OfficialStatus = Literal["pass", "fail", "timeout"]


@dataclass(frozen=True)
class UnittestTask:
    """A solution and its ``TestCases`` code; ``code_prompt`` as the official calibrated mode uses it."""

    solution: str
    test_code: str
    code_prompt: str = ""

    def program(self, calibrated: bool) -> str:
        if calibrated and self.code_prompt:
            return self.code_prompt + "\n    pass\n" + self.solution
        return self.solution


class InProcessSandbox:
    """Runs :class:`UnittestTask` s, one fresh forked process per task. Thread-safe; close() when done."""

    def __init__(self, config: InProcessConfig | None = None) -> None:
        self.config = config or InProcessConfig()
        self.size = self.config.effective_workers
        self._idle: queue.LifoQueue[list[ZygoteWorker | None]] = queue.LifoQueue()
        self._slots: list[list[ZygoteWorker | None]] = [[None] for _ in range(self.size)]
        for slot in self._slots:
            self._idle.put(slot)
        self._executor = ThreadPoolExecutor(max_workers=self.size, thread_name_prefix="inprocess")
        self._closed = False
        self._lock = threading.Lock()

    def __enter__(self) -> InProcessSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _task_frame(self, task: UnittestTask) -> dict[str, Any]:
        c = self.config
        return {
            "code": task.program(c.calibrated),
            "test": task.test_code,
            "timeout_s": c.timeout_s,
            "memory_mb": c.memory_mb,
            "data_mb": c.data_mb,
            "stack_mb": c.stack_mb,
            "file_size_mb": c.file_size_mb,
            "output_bytes": c.output_bytes,
        }

    def run(self, task: UnittestTask) -> ExecutionResult:
        if self._closed:
            raise RuntimeError("this InProcessSandbox is closed")
        slot = self._idle.get()
        started = time.perf_counter()
        try:
            worker = slot[0]
            if worker is None:
                worker = ZygoteWorker(self.config)
                worker.start(START_TIMEOUT_S)
                slot[0] = worker
            try:
                report = worker.request(self._task_frame(task), self.config.timeout_s + HOST_GRACE_S)
            except (WorkerTimeout, WorkerDied) as exc:
                worker.kill()
                slot[0] = None
                log.warning("inprocess_worker_lost", error=str(exc))
                report = {"worker_lost": str(exc), "timeout": isinstance(exc, WorkerTimeout)}
                report["duration_s"] = time.perf_counter() - started
            if worker.tasks >= self.config.recycle_after and slot[0] is not None:
                worker.kill()
                slot[0] = None
            return from_report(report)
        finally:
            self._idle.put(slot)

    def run_many(self, tasks: Sequence[UnittestTask], progress: bool | str = False) -> list[ExecutionResult]:
        """Run all tasks concurrently; results come back in input order."""
        return map_in_order(self._executor, self.run, tasks, progress, "executing (in-process tier)")

    async def arun(self, task: UnittestTask) -> ExecutionResult:
        return await asyncio.get_running_loop().run_in_executor(self._executor, self.run, task)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        for slot in self._slots:
            if slot[0] is not None:
                slot[0].kill()
                slot[0] = None
        self._executor.shutdown(wait=False, cancel_futures=True)


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
        where = "the in-process worker stopped answering" if report.get("worker_lost") else "task time limit"
        return dict(status="timeout", timed_out=True, error_type="Timeout", error_message=where)
    if report.get("worker_lost"):
        return dict(status="crashed", error_type="SandboxWorkerDied", error_message=report["worker_lost"])
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
    timeout there, and a load error or memory error as a failure.
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
