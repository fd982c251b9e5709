"""One in-process worker: the task zygote (``zygote.py``) in its own bubblewrap sandbox.

The sandbox is the function-level one's (``backends/bwrap.py``): no network, private PID/IPC/UTS/user
namespaces, no capabilities, a read-only view of the Python runtime and system libraries, a private
size-limited ``/tmp``, a scrubbed environment (bwrap itself included), dying with its parent. It adds the
execution environment's venv and the system's programs (``/usr/bin``, ``/usr/sbin``, ``/usr/share``),
read-only, as the official harness's image has them, and ``/proc`` of its own PID namespace (tasks use
psutil and subprocess). The libraries need threads and tasks may start processes, so there is no seccomp
filter; every process a task starts is killed when the task ends.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path
from typing import Any

from coding_framework.config.inprocess import InProcessConfig
from coding_framework.sandbox.backends.base import BackendUnavailable
from coding_framework.sandbox.backends.bwrap import (
    CONFINEMENT,
    BwrapProcess,
    _python_runtime,
    _system_lib_args,
    bwrap_binary,
    private_tmp,
)
from coding_framework.sandbox.inprocess.pids import PidsCgroup

ZYGOTE = Path(__file__).resolve().parent / "zygote.py"
SANDBOX_ZYGOTE = "/sandbox/bcb_zygote.py"
SYSTEM_PROGRAMS = ("/usr/bin", "/usr/sbin", "/usr/share", "/etc/alternatives")
ISOLATION: dict[str, Any] = {
    "backend": "process",
    "network": False,
    "pid_namespace": True,
    "readonly_root": True,
    "seccomp": False,
    "tests_in_submission_process": True,
}


def env_python(venv: str) -> str:
    """The venv's interpreter; BackendUnavailable, saying how to build it, when it is missing."""
    python = Path(venv) / "bin" / "python"
    if not python.exists():
        raise BackendUnavailable(
            f"the BigCodeBench execution environment is missing ({python} not found): "
            "run `bash scripts/setup_bigcodebench_env.sh` (or set CODING_FRAMEWORK_BIGCODEBENCH_VENV)"
        )
    return str(python)


def _system_program_args() -> list[str]:
    """``/usr/bin`` and its neighbours read-only, and ``/bin``, ``/sbin`` as the host has them (links on a
    merged-/usr system)."""
    args: list[str] = []
    for path in SYSTEM_PROGRAMS:
        if os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for top in ("/bin", "/sbin"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    return args


def build_command(config: InProcessConfig) -> list[str]:
    env_python(config.env_venv)
    _, runtime_paths = _python_runtime()
    venv = os.path.realpath(config.env_venv)
    cmd = [bwrap_binary(), *CONFINEMENT, *private_tmp(config.tmp_size_mb), "--proc", "/proc", "--dev", "/dev"]
    cmd += [*_system_lib_args(), *_system_program_args()]
    for path in runtime_paths:
        cmd += ["--ro-bind", path, path]
    purelib = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_prefix})["purelib"]
    if os.path.isdir(purelib):
        cmd += ["--tmpfs", purelib]  # only the environment's packages are in view
    cmd += ["--ro-bind", venv, venv, "--ro-bind", str(ZYGOTE), SANDBOX_ZYGOTE]
    env = {
        "HOME": "/tmp",
        "PATH": f"{venv}/bin:/usr/bin:/bin",  # `python` is the environment's, as in the official image
        "MPLCONFIGDIR": "/tmp/mpl",
        "MPLBACKEND": "Agg",
        "OMP_NUM_THREADS": "1",  # as the official reliability_guard sets
        "OPENBLAS_NUM_THREADS": "1",
        "TZ": "UTC",
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    for key, value in env.items():
        cmd += ["--setenv", key, value]
    python = os.path.join(venv, "bin", "python")
    return [*cmd, "--chdir", "/tmp", python, "-I", SANDBOX_ZYGOTE, *config.preload]


class ZygoteWorker(BwrapProcess[InProcessConfig]):
    """A running zygote: send a task, read its report. Not thread-safe; the pool gives it one caller."""

    isolation = ISOLATION

    def __init__(self, config: InProcessConfig) -> None:
        super().__init__(config, build_command(config))
        self._cgroup: PidsCgroup | None = None

    @property
    def process_limit(self) -> str:
        """What caps the processes: ``pids_cgroup``, ``rlimit_nproc``, or ``none`` (root, no cgroup)."""
        if self._cgroup is not None:
            return "pids_cgroup"
        return "rlimit_nproc" if os.geteuid() != 0 else "none"

    def _before_exec(self) -> Callable[[], None] | None:
        return None if self._cgroup is None else self._cgroup.join

    def start(self, timeout_s: float) -> None:
        self._cgroup = PidsCgroup.create(self.config.max_processes)
        super().start(timeout_s)

    def request(self, job: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        nproc = None if self._cgroup is not None else self.config.max_processes
        report = super().request({**job, "nproc": nproc}, timeout_s)
        report["process_limit"] = self.process_limit
        return report

    def kill(self) -> None:
        super().kill()
        if self._cgroup is not None:
            self._cgroup.remove()
            self._cgroup = None


__all__ = ["ZygoteWorker", "build_command", "env_python"]
