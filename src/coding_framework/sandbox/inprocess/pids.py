"""A cap on the processes and threads of one in-process worker: a pids cgroup where one can be made.

Tasks may start processes (subprocess, multiprocessing), so the seccomp filter of the function-level judge,
which forbids fork, does not fit; a fork bomb must still stop at a ceiling. RLIMIT_NPROC cannot be that
ceiling for root, whose processes the kernel never counts against it, and counts every process of the user
system-wide otherwise. A pids cgroup (v1 ``pids`` hierarchy, or v2 with the ``pids`` controller) caps exactly
the worker's tree. Where none can be created, the zygote falls back to RLIMIT_NPROC and the result's
``isolation["process_limit"]`` says which one holds.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import time
from pathlib import Path

from coding_framework.logs import get_logger

log = get_logger(__name__)
_V1 = Path("/sys/fs/cgroup/pids")
_V2 = Path("/sys/fs/cgroup")
_ids = itertools.count()


def _hierarchy() -> Path | None:
    if (_V1 / "cgroup.procs").exists():
        return _V1
    try:
        if "pids" in (_V2 / "cgroup.controllers").read_text().split():
            own = next(
                (
                    line[3:]
                    for line in Path("/proc/self/cgroup").read_text().splitlines()
                    if line.startswith("0::")
                ),
                "/",
            )
            return _V2 / own.lstrip("/")
    except OSError:
        return None
    return None


class PidsCgroup:
    """A fresh pids cgroup with ``pids.max = limit``; ``join()`` runs in the worker's child before exec."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, limit: int) -> PidsCgroup | None:
        base = _hierarchy()
        if base is None:
            return None
        path = base / "coding-framework-inprocess" / f"w{os.getpid()}-{next(_ids)}"
        try:
            path.mkdir(parents=True, exist_ok=True)
            (path / "pids.max").write_text(str(limit))
        except OSError as exc:
            log.info("inprocess_no_pids_cgroup", reason=str(exc))
            with contextlib.suppress(OSError):
                path.rmdir()
            return None
        return cls(path)

    def join(self) -> None:
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def remove(self) -> None:
        """Remove the cgroup once its processes are gone (the kernel reaps a killed namespace quickly)."""
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.02)
        log.warning("inprocess_cgroup_left", path=str(self.path))
