"""Replicas of each version: round robin over the healthy ones, ejection, retries on the same version,
background health probes that re-admit recovered replicas and restart dead ones; and admission, a bounded
queue that answers 429 instead of letting work pile up.

When every replica of a version is ejected the request gets a 429 with ``Retry-After`` (code
``backend_unavailable``): retryable like overload, never a 5xx. With ``pool.replicas >= 2`` a single dead
replica never reaches a client; its requests are retried on a healthy one.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from coding_framework.config.serving import PoolConfig
from coding_framework.logs import get_logger
from coding_framework.serving.backends import Replica
from coding_framework.serving.errors import APIError, ReplicaError, too_many

log = get_logger(__name__)
T = TypeVar("T")


@dataclass
class _Slot:
    replica: Replica
    healthy: bool = True
    failures: int = 0
    restarting: asyncio.Task[None] | None = field(default=None, repr=False)


class VersionPool:
    """The replicas of one version. ``call`` tries up to ``attempts`` healthy replicas, in turn."""

    def __init__(self, version_id: str, replicas: list[Replica], config: PoolConfig) -> None:
        self.version_id, self.config = version_id, config
        self.slots = [_Slot(r) for r in replicas]
        self._next = 0

    @property
    def healthy(self) -> int:
        return sum(s.healthy for s in self.slots)

    def _pick(self, tried: set[int]) -> _Slot | None:
        n = len(self.slots)
        for k in range(n):
            i = (self._next + k) % n
            if self.slots[i].healthy and i not in tried:
                self._next = i + 1
                tried.add(i)
                return self.slots[i]
        return None

    async def call(self, fn: Callable[[Replica], Awaitable[T]]) -> T:
        tried: set[int] = set()
        for _ in range(self.config.attempts):
            slot = self._pick(tried)
            if slot is None:
                break
            try:
                # asyncio.timeout, unlike wait_for, creates no task per call
                async with asyncio.timeout(self.config.request_timeout_s):
                    result = await fn(slot.replica)
            except (ReplicaError, TimeoutError) as exc:
                self._failed(slot, str(exc) or type(exc).__name__)
                continue
            slot.failures = 0
            return result
        raise too_many(
            f"no healthy replica of {self.version_id} is available; retry shortly",
            self.config.retry_after_s,
            code="backend_unavailable",
        )

    def _failed(self, slot: _Slot, reason: str) -> None:
        slot.failures += 1
        if slot.healthy and slot.failures >= self.config.eject_after:
            slot.healthy = False
            log.warning(
                "replica_ejected", version=self.version_id, replica=slot.replica.name, reason=reason[:200]
            )

    async def probe(self) -> None:
        """Probe every replica: re-admit the ones that answer, eject (and restart) the ones that do not."""
        for slot in self.slots:
            if slot.restarting is not None and not slot.restarting.done():
                continue
            if await slot.replica.healthy():
                if not slot.healthy:
                    log.info("replica_readmitted", version=self.version_id, replica=slot.replica.name)
                slot.healthy, slot.failures = True, 0
                continue
            self._failed(slot, "health probe failed")
            if not slot.healthy and self.config.restart_dead:
                slot.restarting = asyncio.create_task(self._restart(slot))

    async def _restart(self, slot: _Slot) -> None:
        log.info("replica_restarting", version=self.version_id, replica=slot.replica.name)
        try:
            await slot.replica.restart()
        except Exception as exc:  # a failed restart is retried at the next probe
            log.warning("replica_restart_failed", replica=slot.replica.name, error=str(exc)[:200])

    async def close(self) -> None:
        for slot in self.slots:
            if slot.restarting is not None:
                slot.restarting.cancel()
            with contextlib.suppress(Exception):
                await slot.replica.close()


class HealthMonitor:
    """Probes every pool each ``interval_s`` on one background task."""

    def __init__(self, pools: dict[str, VersionPool], interval_s: float) -> None:
        self.pools, self.interval_s = pools, interval_s
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop())

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            for pool in list(self.pools.values()):
                try:
                    await pool.probe()
                except Exception as exc:  # one broken probe must not stop the others
                    log.warning("health_probe_error", version=pool.version_id, error=str(exc)[:200])

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


class Admission:
    """At most ``max_concurrency`` requests run and ``queue_size`` wait; the next one gets a 429."""

    def __init__(self, config: PoolConfig) -> None:
        self.config = config
        self.capacity = config.max_concurrency + config.queue_size
        self.pending = 0
        self._running = asyncio.Semaphore(config.max_concurrency)

    def enter(self) -> None:
        """Claim a place (running or queued) or raise the 429; pair with ``leave``."""
        if self.pending >= self.capacity:
            raise too_many(
                f"the server is at capacity ({self.capacity} requests in flight); retry shortly",
                self.config.retry_after_s,
                code="queue_full",
            )
        self.pending += 1

    def leave(self) -> None:
        self.pending -= 1

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        self.enter()
        try:
            async with self._running:
                yield
        finally:
            self.leave()

    async def acquire_running(self) -> None:
        await self._running.acquire()

    def release_running(self) -> None:
        self._running.release()


class RateLimiter:
    """A token bucket per key: ``rate_per_s`` sustained, ``burst`` at once; then 429 with Retry-After."""

    def __init__(self, rate_per_s: float, burst: int, max_keys: int = 100_000) -> None:
        self.rate, self.burst, self.max_keys = rate_per_s, float(burst), max_keys
        self._buckets: dict[str, tuple[float, float]] = {}

    def check(self, key: str) -> None:
        stamp = time.monotonic()
        tokens, last = self._buckets.get(key, (self.burst, stamp))
        tokens = min(self.burst, tokens + (stamp - last) * self.rate)
        if tokens < 1.0:
            self._buckets[key] = (tokens, stamp)
            wait = max(1, int((1.0 - tokens) / self.rate + 0.999))
            raise APIError(
                429,
                "rate limit exceeded for this key; slow down",
                type="rate_limit_error",
                code="rate_limit_exceeded",
                retry_after=wait,
            )
        if len(self._buckets) >= self.max_keys and key not in self._buckets:
            self._buckets.clear()  # bounded memory: forgetting buckets only ever grants a fresh burst
        self._buckets[key] = (tokens - 1.0, stamp)
