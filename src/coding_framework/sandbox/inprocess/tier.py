"""The in-process tier's pool: BigCodeBench tasks on zygote workers, under the shared pool's rules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coding_framework.config.inprocess import InProcessConfig
from coding_framework.sandbox.backends.base import Worker
from coding_framework.sandbox.inprocess.report import from_report
from coding_framework.sandbox.inprocess.worker import ZygoteWorker
from coding_framework.sandbox.pool import WorkerPool
from coding_framework.sandbox.result import ExecutionResult

HOST_GRACE_S = 10.0


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


class InProcessSandbox(WorkerPool[UnittestTask]):
    """Runs :class:`UnittestTask` s, one fresh forked process per task. Thread-safe; close() when done."""

    tier = "in_process"
    start_timeout_s = 60.0  # a worker imports the preloaded libraries (pandas, sklearn, ...) before its hello
    label = "executing (in-process tier)"

    def __init__(self, config: InProcessConfig | None = None) -> None:
        self.config = config or InProcessConfig()
        super().__init__(self.config.effective_workers, self.config.recycle_after)

    def _new_worker(self) -> ZygoteWorker:
        return ZygoteWorker(self.config)

    def _frame(self, item: UnittestTask) -> dict[str, Any]:
        c = self.config
        return {
            "code": item.program(c.calibrated),
            "test": item.test_code,
            "timeout_s": c.timeout_s,
            "memory_mb": c.memory_mb,
            "data_mb": c.data_mb,
            "stack_mb": c.stack_mb,
            "file_size_mb": c.file_size_mb,
            "output_bytes": c.output_bytes,
        }

    def _host_deadline(self, item: UnittestTask) -> float:
        return self.config.timeout_s + HOST_GRACE_S

    def _result(self, report: dict[str, Any], worker: Worker[Any]) -> ExecutionResult:
        return from_report(report)


__all__ = ["InProcessSandbox", "UnittestTask"]
