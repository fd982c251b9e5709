"""One pool of sandbox workers for both trust tiers, run from threads or from asyncio.

:class:`WorkerPool` holds long-lived workers (fork servers in their own sandboxes) in slots; the host only
writes job frames to them and reads reports back, so launching a run costs a pipe round trip and the
training process itself is never forked. :class:`Sandbox` runs the hardened tier's :class:`Job` s on a
backend's workers; ``sandbox.inprocess.InProcessSandbox`` runs BigCodeBench tasks on zygote workers.
Both follow the same rules.

One worker's failure never aborts an evaluation. The rules, per job:

1. **The backend cannot exist** (no engine, no bwrap binary, no image): the worker's constructor or
   start raises a plain :class:`BackendUnavailable`. Nothing is retried; the error propagates with the
   backend's one-line reason.
2. **A worker does not come up** (:class:`WorkerStartFailed`: it exited during start-up, or sent no
   hello before the pool's ``start_timeout_s``; or any BackendUnavailable once this pool has had a worker
   up, such as an engine that stopped answering for a while): it is started again, up to
   ``START_ATTEMPTS`` times with exponential backoff (``BACKOFF_S``, doubling). If every attempt fails and
   this pool has never had a worker up, the backend is taken as unusable: a BackendUnavailable is raised,
   and every later job raises it at once (fail fast). Once a worker has been up, the failure is the
   infrastructure's, not the job's: that job alone gets an infrastructure-error result (status
   ``error``, error_type ``SandboxInfrastructureError``, never passed), and the pool carries on.
3. **A worker dies or stops answering during a job** (:class:`WorkerDied`, :class:`WorkerTimeout`):
   the judge normally survives anything a submission does (it reports a killed submission itself), so
   this is either infrastructure (engine, OOM killer, host load) or a submission that took the whole
   worker down. The job is regraded once on a *freshly started* worker; its successful hello proves
   the infrastructure works at that moment. If the regrade returns a report, that report is the
   verdict. If the regrade kills or hangs the fresh worker too, the submission did it, and that is
   its verdict: ``crashed`` (``SandboxWorkerDied``) or ``timeout``. A job therefore costs at most two
   runs, never loops, and never turns a submission's own crash into an infrastructure error; if the
   fresh worker cannot be started (rule 2), the job gets the infrastructure error.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar, Generic, Self, TypeVar

from coding_framework.config.sandbox import SandboxConfig
from coding_framework.logs import get_logger
from coding_framework.sandbox.backends import get_backend
from coding_framework.sandbox.backends.base import (
    BackendUnavailable,
    Worker,
    WorkerDied,
    WorkerStartFailed,
    WorkerTimeout,
)
from coding_framework.sandbox.job import Job
from coding_framework.sandbox.progress import map_in_order
from coding_framework.sandbox.result import ExecutionResult, Tier, from_judge

log = get_logger(__name__)
START_TIMEOUT_S = 30.0
START_ATTEMPTS = 3
BACKOFF_S = 0.5
HOST_GRACE_S = 5.0
INFRASTRUCTURE_ERROR = "SandboxInfrastructureError"


ItemT = TypeVar("ItemT")


class _Slot:
    def __init__(self) -> None:
        self.worker: Worker[Any] | None = None
        self.jobs = 0


class WorkerPool(ABC, Generic[ItemT]):
    """Runs items on ``size`` long-lived workers under the module's rules. Thread-safe; use as a context
    manager or call close().

    A subclass says how to start one worker and how an item travels: its frame, its host-side deadline, and
    the result its worker's report becomes.
    """

    tier: ClassVar[Tier] = "hardened"
    start_timeout_s: ClassVar[float] = START_TIMEOUT_S
    label: ClassVar[str] = "executing"

    def __init__(self, size: int, recycle_after: int) -> None:
        self.size = size
        self._recycle_after = recycle_after
        self._idle: queue.LifoQueue[_Slot] = queue.LifoQueue()
        self._slots = [_Slot() for _ in range(self.size)]
        for slot in self._slots:
            self._idle.put(slot)
        self._executor = ThreadPoolExecutor(max_workers=self.size, thread_name_prefix=type(self).__name__)
        self._closed = False
        self._lock = threading.Lock()
        self._ever_started = False
        self._unusable: BackendUnavailable | None = None

    @abstractmethod
    def _new_worker(self) -> Worker[Any]:
        """A worker, not started; BackendUnavailable when this kind of worker cannot exist here."""

    @abstractmethod
    def _frame(self, item: ItemT) -> dict[str, Any]: ...

    @abstractmethod
    def _host_deadline(self, item: ItemT) -> float:
        """Seconds the host waits for the item's report before it takes the worker as lost."""

    @abstractmethod
    def _result(self, report: dict[str, Any], worker: Worker[Any]) -> ExecutionResult: ...

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def warmup(self, n: int | None = None) -> None:
        """Start up to ``n`` workers now rather than on first use (one that fails is started on use)."""
        slots = [self._idle.get() for _ in range(min(n or self.size, self.size))]
        try:
            list(self._executor.map(self._start_quietly, slots))
        finally:
            for slot in slots:
                self._idle.put(slot)

    def _ensure_started(self, slot: _Slot, fresh: bool = False) -> Worker[Any]:
        """The slot's worker, started (again, when ``fresh``) with backoff; see the module's rule 2."""
        if fresh:
            self._retire(slot)
        if slot.worker is not None:
            return slot.worker
        delay = BACKOFF_S
        for attempt in range(1, START_ATTEMPTS + 1):
            if self._unusable is not None:
                raise self._unusable
            try:
                worker = self._new_worker()
                worker.start(self.start_timeout_s)
            except BackendUnavailable as exc:
                if not (self._ever_started or isinstance(exc, WorkerStartFailed)):
                    raise  # rule 1: the backend cannot run here at all
                log.warning("sandbox.worker_start_failed", tier=self.tier, attempt=attempt, error=str(exc))
                if attempt == START_ATTEMPTS:
                    if not self._ever_started:
                        self._unusable = BackendUnavailable(f"{exc} ({START_ATTEMPTS} attempts)")
                        raise self._unusable from None
                    raise WorkerStartFailed(str(exc)) from None
                time.sleep(delay)
                delay *= 2
            else:
                self._ever_started = True
                slot.worker, slot.jobs = worker, 0
                return worker
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _start_quietly(self, slot: _Slot) -> None:
        with contextlib.suppress(WorkerStartFailed):
            self._ensure_started(slot)

    def _retire(self, slot: _Slot) -> None:
        if slot.worker is not None:
            slot.worker.kill()
            slot.worker = None

    def run(self, item: ItemT) -> ExecutionResult:
        """Run one item; see the module docstring for what happens when a worker fails."""
        if self._closed:
            raise RuntimeError(f"this {type(self).__name__} is closed")
        started = time.perf_counter()
        lost: WorkerDied | WorkerTimeout | None = None
        for regrade in (False, True):
            slot = self._idle.get()
            try:
                try:
                    worker = self._ensure_started(slot, fresh=regrade)
                except WorkerStartFailed as exc:
                    message = f"no sandbox worker could be started: {exc}"
                    return _infrastructure_error(message, started, self.tier)
                try:
                    report = worker.request(self._frame(item), self._host_deadline(item))
                except (WorkerDied, WorkerTimeout) as exc:
                    self._retire(slot)
                    log.warning("sandbox.worker_lost", tier=self.tier, regrade=regrade, error=str(exc))
                    lost = exc
                    continue
                slot.jobs += 1
                if slot.jobs >= self._recycle_after:
                    self._retire(slot)
                return self._result(report, worker)
            finally:
                self._idle.put(slot)
        return _lost_worker_verdict(lost, started, self.tier)

    def run_many(self, items: Sequence[ItemT], progress: bool | str = False) -> list[ExecutionResult]:
        """Run all items concurrently; results come back in input order."""
        return map_in_order(self._executor, self.run, items, progress, self.label)

    async def arun(self, item: ItemT) -> ExecutionResult:
        """Run an item without blocking the event loop."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, self.run, item)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        for slot in self._slots:
            self._retire(slot)
        self._executor.shutdown(wait=False, cancel_futures=True)


class Sandbox(WorkerPool[Job]):
    """Runs :class:`Job` s in the hardened tier, on workers of ``config.backend``.

    An unknown ``config.backend`` is a ``ConfigError`` here, listing the registered backends.
    """

    def __init__(self, config: SandboxConfig | None = None) -> None:
        self.config = config or SandboxConfig()
        self._backend = get_backend(self.config.backend)
        super().__init__(self.config.effective_workers, self.config.recycle_after)

    def _new_worker(self) -> Worker[SandboxConfig]:
        return self._backend(self.config)

    def _frame(self, item: Job) -> dict[str, Any]:
        return item.to_wire(self.config.limits)

    def _host_deadline(self, item: Job) -> float:
        return (item.limits or self.config.limits).timeout_s + HOST_GRACE_S

    def _result(self, report: dict[str, Any], worker: Worker[Any]) -> ExecutionResult:
        return from_judge(report, worker.isolation)


def _infrastructure_error(message: str, started: float, tier: Tier) -> ExecutionResult:
    return ExecutionResult(
        passed=False,
        tier=tier,
        status="error",
        error_type=INFRASTRUCTURE_ERROR,
        error_message=message,
        duration_s=time.perf_counter() - started,
    )


def _lost_worker_verdict(
    exc: WorkerDied | WorkerTimeout | None, started: float, tier: Tier
) -> ExecutionResult:
    """The verdict for a job that took down two workers in a row, the second one freshly started."""
    elapsed = time.perf_counter() - started
    if isinstance(exc, WorkerTimeout):
        return ExecutionResult(
            passed=False,
            tier=tier,
            status="timeout",
            timed_out=True,
            error_type="Timeout",
            error_message="the sandbox worker stopped answering",
            duration_s=elapsed,
        )
    return ExecutionResult(
        passed=False,
        tier=tier,
        status="crashed",
        error_type="SandboxWorkerDied",
        error_message=f"the submission took down its sandbox worker twice: {exc}",
        duration_s=elapsed,
    )


__all__ = ["INFRASTRUCTURE_ERROR", "Sandbox", "WorkerPool"]
