"""Judges for client tests. Tests posted to /v1/solve are untrusted, and the judge runs tests in its own
process (only the submission runs in the judge's untrusted child). So each client job gets a judge of its
own: the serving sandbox recycles its worker after every job (``recycle_after=1``), and a worker is a
separate bubblewrap sandbox (own PID/IPC/mount namespaces, own tmpfs, no network). What one request's tests
do to their judge (patching it, writing files, leaving processes, printing frames) dies with that judge
before any other job is sent to a worker, and concurrent jobs never share one. An address-space limit on
the whole judge tree (``judge_memory_mb``) makes tests that exhaust memory fail their own job, not the host.
"""

from __future__ import annotations

from coding_framework.config.sandbox import SandboxConfig
from coding_framework.config.serving import SolveConfig


def judge_sandbox_config(config: SolveConfig) -> SandboxConfig:
    """One fresh, memory-capped judge per job, at most ``judge_workers`` at once."""
    return SandboxConfig(
        backend="process",
        workers=config.judge_workers,
        limits=config.limits,
        recycle_after=1,
        judge_memory_mb=config.judge_memory_mb,
    )


__all__ = ["judge_sandbox_config"]
