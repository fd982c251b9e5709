"""What a backend provides: workers that take job frames and return the judge's reports."""

from __future__ import annotations

import select
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from coding_framework.config.loader import ConfigError
from coding_framework.config.sandbox import SandboxConfig
from coding_framework.registry import Registry
from coding_framework.sandbox.judge import wire

JUDGE_DIR = Path(__file__).resolve().parent.parent / "judge"
JUDGE_BOOT = "import sys; sys.path.insert(0, '/sandbox'); from judge import server; server.main()"
MAX_REPORT_BYTES = 64 << 20
ConfigT = TypeVar("ConfigT")


class BackendUnavailable(RuntimeError):
    """The chosen backend cannot run here; the message says why and what to do."""


class WorkerStartFailed(BackendUnavailable):
    """One worker did not come up this time (exited during start-up, or no hello before the deadline).

    The backend itself exists, so the pool retries with backoff; a BackendUnavailable that is not a
    WorkerStartFailed means the backend cannot run here at all and is not retried.
    """


class WorkerDied(RuntimeError):
    """The worker exited or stopped answering."""


class WorkerTimeout(RuntimeError):
    """The worker did not answer within the host-side deadline."""


def read_exact_fd(
    read: Callable[[int], bytes], fileno: int, deadline: float
) -> Callable[[int], bytes | None]:
    """A reader for :func:`wire.recv_frame` over a blocking fd with an absolute deadline."""

    def read_before_deadline(n: int) -> bytes:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fileno], [], [], remaining)[0]:
            raise WorkerTimeout("no answer from the sandbox worker before the deadline")
        return read(n)

    return wire.exact_reader(read_before_deadline)


class Worker(ABC, Generic[ConfigT]):
    """One long-lived judge process (a fork server) inside its own sandbox, built from its tier's config.

    Backends are ``Worker[SandboxConfig]``; the in-process tier's zygote is a ``Worker[InProcessConfig]``.
    One :class:`~coding_framework.sandbox.pool.WorkerPool` runs either.
    """

    isolation: ClassVar[dict[str, Any]] = {}

    def __init__(self, config: ConfigT) -> None:
        self.config = config

    @abstractmethod
    def start(self, timeout_s: float) -> None: ...

    @abstractmethod
    def _write(self, data: bytes) -> None: ...

    @abstractmethod
    def _reader(self, deadline: float) -> Callable[[int], bytes | None]: ...

    @abstractmethod
    def kill(self) -> None: ...

    def _expect_ready(self, timeout_s: float) -> None:
        try:
            hello = wire.recv_frame(self._reader(time.monotonic() + timeout_s), 1 << 16)
        except (WorkerTimeout, wire.WireError, OSError) as exc:
            hello, reason = None, str(exc)
        else:
            reason = "it exited during start-up"
        if not (isinstance(hello, dict) and hello.get("ready")):
            detail = self.diagnostics()
            self.kill()
            raise WorkerStartFailed(
                f"sandbox worker failed to start ({reason}){': ' + detail if detail else ''}"
            )

    def diagnostics(self) -> str:
        return ""

    def request(self, job: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        try:
            wire.send_frame(self._write, job)
            report = wire.recv_frame(self._reader(time.monotonic() + timeout_s), MAX_REPORT_BYTES)
        except (OSError, wire.WireError) as exc:
            raise WorkerDied(str(exc)) from None
        if not isinstance(report, dict):
            raise WorkerDied("the sandbox worker exited")
        return report


BACKENDS: Registry[type[Worker[SandboxConfig]]] = Registry("sandbox backend", "backends", miss=ConfigError)


register_backend = BACKENDS.register
"""Register a :class:`Worker` class as the backend ``SandboxConfig.backend`` calls ``name``."""


def get_backend(name: str) -> type[Worker[SandboxConfig]]:
    """The worker class registered as ``name``; the error lists the valid names."""
    return BACKENDS.resolve(name)
