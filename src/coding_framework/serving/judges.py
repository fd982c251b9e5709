"""Judges for client tests. Tests posted to /v1/solve are untrusted, and the judge runs tests in its own
process (only the submission runs in the judge's untrusted child). So each client job gets a judge of its
own: the serving sandbox recycles its worker after every job (``recycle_after=1``), and a worker is a
separate bubblewrap sandbox (own PID/IPC/mount namespaces, own tmpfs, no network). What one request's tests
do to their judge (patching it, writing files, leaving processes, printing frames) dies with that judge
before any other job is sent to a worker, and concurrent jobs never share one.

``process-capped`` is the ``process`` backend with an address-space limit on the whole judge tree, so
tests that exhaust memory fail their own job instead of the host.
"""

from __future__ import annotations

import resource
import subprocess

from coding_framework.config.sandbox import SandboxConfig
from coding_framework.config.serving import SolveConfig
from coding_framework.sandbox.backends import BACKENDS, BwrapWorker, register_backend

CAPPED = "process-capped"


class CappedBwrapWorker(BwrapWorker):
    """``BwrapWorker`` whose judge, zygote and children run under ``RLIMIT_AS = judge_memory_mb``."""

    judge_memory_mb = 2048

    def start(self, timeout_s: float) -> None:
        limit = self.judge_memory_mb << 20

        def cap() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

        self._stderr.seek(0)
        self._stderr.truncate()
        self._proc = subprocess.Popen(
            self._cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            bufsize=0,
            close_fds=True,
            start_new_session=True,
            preexec_fn=cap,
        )
        self._expect_ready(timeout_s)


def _capped_worker(memory_mb: int) -> None:
    name = f"{CAPPED}-{memory_mb}"
    if name not in BACKENDS:
        register_backend(name)(
            type(f"CappedBwrapWorker{memory_mb}", (CappedBwrapWorker,), {"judge_memory_mb": memory_mb})
        )


def judge_sandbox_config(config: SolveConfig) -> SandboxConfig:
    """One fresh, memory-capped judge per job, at most ``judge_workers`` at once."""
    _capped_worker(config.judge_memory_mb)
    return SandboxConfig(
        backend=f"{CAPPED}-{config.judge_memory_mb}",
        workers=config.judge_workers,
        limits=config.limits,
        recycle_after=1,
    )
