"""Gathers concurrent async requests into batches run on one worker thread.

Concurrent inference-graph episodes (``solve`` many, evaluation, the notebook) awaiting one local model
through ``LocalEngine.agenerate`` run as one left-padded batch, far cheaper than one by one, and the worker
thread keeps the event loop free while the model runs. Training rollouts do not come here: their
``LockstepEngine`` decodes each wave with ``generate_batch`` so the batches do not depend on timing.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

Req = TypeVar("Req")
Res = TypeVar("Res")

# A queued request: what to run, the caller's future and the loop that future belongs to.
_Pending = tuple[Req, asyncio.Future[Res], asyncio.AbstractEventLoop]


class RequestBatcher(Generic[Req, Res]):
    """Runs ``run_batch`` on up to ``max_batch`` queued requests at a time, in a daemon thread.

    A batch is closed when it is full or ``wait_s`` after its first request arrived, whichever is first.
    An exception from ``run_batch`` is raised in every caller of that batch.
    """

    def __init__(
        self,
        run_batch: Callable[[Sequence[Req]], Sequence[Res]],
        max_batch: int,
        wait_s: float,
        name: str = "engine-batcher",
    ) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        self._run_batch = run_batch
        self._max_batch = max_batch
        self._wait_s = wait_s
        self._name = name
        self._queue: queue.Queue[_Pending[Req, Res] | None] = queue.Queue()  # None: stop the worker
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    async def submit(self, request: Req) -> Res:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Res] = loop.create_future()
        self._ensure_worker()
        self._queue.put((request, future, loop))
        return await future

    def close(self) -> None:
        """Stop the worker after the requests already queued; later submits start a new one."""
        with self._start_lock:
            if self._thread is not None:
                self._queue.put(None)
                self._thread.join()
                self._thread = None

    def _ensure_worker(self) -> None:
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name=self._name, daemon=True)
                self._thread.start()

    def _work(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            closing = self._fill(batch)
            self._run(batch)
            if closing:
                return

    def _fill(self, batch: list[_Pending[Req, Res]]) -> bool:
        deadline = time.monotonic() + self._wait_s
        while len(batch) < self._max_batch:
            try:
                item = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return False
            if item is None:
                return True
            batch.append(item)
        return False

    def _run(self, batch: list[_Pending[Req, Res]]) -> None:
        requests = [item[0] for item in batch]
        try:
            results = list(self._run_batch(requests))
            if len(results) != len(requests):
                raise RuntimeError(f"batch of {len(requests)} requests returned {len(results)} results")
        except BaseException as exc:
            for _, future, loop in batch:
                _post(loop, future, None, exc)
            return
        for (_, future, loop), result in zip(batch, results, strict=True):
            _post(loop, future, result, None)


def _post(
    loop: asyncio.AbstractEventLoop, future: asyncio.Future, result: object, exc: BaseException | None
) -> None:
    with contextlib.suppress(RuntimeError):  # the caller's loop is closed: nobody waits any more
        loop.call_soon_threadsafe(_settle, future, result, exc)


def _settle(future: asyncio.Future, result: object, exc: BaseException | None) -> None:
    if future.done():  # the caller was cancelled meanwhile
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(result)
