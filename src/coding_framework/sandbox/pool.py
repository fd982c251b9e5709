"""A pool of judge workers that runs jobs concurrently from threads or from asyncio.

The host process only writes job frames to long-lived workers and reads reports back: launching a
run costs a pipe round trip, and the training process itself is never forked.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from coding_framework.config.sandbox import SandboxConfig
from coding_framework.logs import get_logger
from coding_framework.sandbox.backends import get_backend
from coding_framework.sandbox.backends.base import Worker, WorkerDied, WorkerTimeout
from coding_framework.sandbox.job import Job
from coding_framework.sandbox.result import ExecutionResult, from_judge

log = get_logger(__name__)
START_TIMEOUT_S = 30.0
HOST_GRACE_S = 5.0


class _Slot:
    def __init__(self) -> None:
        self.worker: Worker | None = None
        self.jobs = 0


class Sandbox:
    """Runs :class:`Job` s in isolated workers. Thread-safe; use as a context manager or call close().

    An unknown ``config.backend`` is a ``ConfigError`` here, listing the registered backends.
    """

    def __init__(self, config: SandboxConfig | None = None) -> None:
        self.config = config or SandboxConfig()
        self._backend = get_backend(self.config.backend)
        self.size = self.config.effective_workers
        self._idle: queue.LifoQueue[_Slot] = queue.LifoQueue()
        self._slots = [_Slot() for _ in range(self.size)]
        for slot in self._slots:
            self._idle.put(slot)
        self._executor = ThreadPoolExecutor(max_workers=self.size, thread_name_prefix="sandbox")
        self._closed = False
        self._lock = threading.Lock()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def warmup(self, n: int | None = None) -> None:
        """Start up to ``n`` workers now rather than on first use."""
        slots = [self._idle.get() for _ in range(min(n or self.size, self.size))]
        try:
            list(self._executor.map(self._ensure_started, slots))
        finally:
            for slot in slots:
                self._idle.put(slot)

    def _ensure_started(self, slot: _Slot) -> Worker:
        if slot.worker is None:
            worker = self._backend(self.config)
            worker.start(START_TIMEOUT_S)
            slot.worker, slot.jobs = worker, 0
        return slot.worker

    def _retire(self, slot: _Slot) -> None:
        if slot.worker is not None:
            slot.worker.kill()
            slot.worker = None

    def run(self, job: Job) -> ExecutionResult:
        if self._closed:
            raise RuntimeError("this Sandbox is closed")
        limits = job.limits or self.config.limits
        slot = self._idle.get()
        try:
            worker = self._ensure_started(slot)
            started = time.perf_counter()
            try:
                raw = worker.request(job.to_wire(self.config.limits), limits.timeout_s + HOST_GRACE_S)
            except WorkerTimeout:
                self._retire(slot)
                return ExecutionResult(
                    passed=False,
                    status="timeout",
                    timed_out=True,
                    error_type="Timeout",
                    error_message="the sandbox worker stopped answering",
                    duration_s=time.perf_counter() - started,
                )
            except WorkerDied as exc:
                self._retire(slot)
                return ExecutionResult(
                    passed=False,
                    status="crashed",
                    error_type="SandboxWorkerDied",
                    error_message=str(exc),
                    duration_s=time.perf_counter() - started,
                )
            slot.jobs += 1
            if slot.jobs >= self.config.recycle_after:
                self._retire(slot)
            return from_judge(raw, worker.isolation)
        finally:
            self._idle.put(slot)

    def run_many(self, jobs: Sequence[Job], progress: bool | str = False) -> list[ExecutionResult]:
        """Run all jobs concurrently; results come back in input order."""
        if not progress:
            return list(self._executor.map(self.run, jobs))
        from rich.console import Console
        from rich.progress import Progress

        results: list[ExecutionResult | None] = [None] * len(jobs)
        label = progress if isinstance(progress, str) else "executing"
        with Progress(console=Console(stderr=True), transient=False) as bar:
            task = bar.add_task(label, total=len(jobs))
            futures = {self._executor.submit(self.run, job): i for i, job in enumerate(jobs)}
            for fut in _as_completed(futures):
                results[futures[fut]] = fut.result()
                bar.advance(task)
        return [r for r in results if r is not None]

    async def arun(self, job: Job) -> ExecutionResult:
        """Run a job without blocking the event loop."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, self.run, job)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        for slot in self._slots:
            self._retire(slot)
        self._executor.shutdown(wait=False, cancel_futures=True)


def _as_completed(futures):
    from concurrent.futures import as_completed

    return as_completed(futures)
