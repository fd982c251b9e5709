"""One in-process worker: the task zygote (``zygote.py``) in its own bubblewrap sandbox.

The sandbox is the function-level one's (``backends/bwrap.py``): no network, private PID/IPC/UTS/user
namespaces, no capabilities, a read-only view of the Python runtime and system libraries, a private
size-limited ``/tmp``, a scrubbed environment, dying with its parent. It adds the execution environment's
venv, read-only, and ``/proc`` of its own PID namespace (tasks use psutil and subprocess). The libraries
need threads and tasks may start processes, so there is no seccomp filter; every process a task starts is
killed when the task ends.
"""

from __future__ import annotations

import json
import os
import select
import struct
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

from coding_framework.config.inprocess import InProcessConfig
from coding_framework.sandbox.backends.base import BackendUnavailable, WorkerDied, WorkerTimeout
from coding_framework.sandbox.backends.bwrap import (
    CONFINEMENT,
    _python_runtime,
    _system_lib_args,
    bwrap_binary,
    stop_process,
)
from coding_framework.sandbox.inprocess.pids import PidsCgroup

ZYGOTE = Path(__file__).resolve().parent / "zygote.py"
SANDBOX_ZYGOTE = "/sandbox/bcb_zygote.py"
MAX_REPORT_BYTES = 16 << 20
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


def build_command(config: InProcessConfig) -> list[str]:
    env_python(config.env_venv)
    _, runtime_paths = _python_runtime()
    venv = os.path.realpath(config.env_venv)
    cmd = [bwrap_binary(), *CONFINEMENT, *_system_lib_args()]
    for path in runtime_paths:
        cmd += ["--ro-bind", path, path]
    purelib = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_prefix})["purelib"]
    if os.path.isdir(purelib):
        cmd += ["--tmpfs", purelib]  # only the environment's packages are in view
    cmd += ["--ro-bind", venv, venv, "--ro-bind", str(ZYGOTE), SANDBOX_ZYGOTE]
    cmd += ["--proc", "/proc", "--dev", "/dev", "--size", str(config.tmp_size_mb << 20), "--tmpfs", "/tmp"]
    env = {
        "HOME": "/tmp",
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


def _frame(obj: object) -> bytes:
    data = json.dumps(obj).encode()
    return struct.pack(">I", len(data)) + data


class ZygoteWorker:
    """A running zygote: send a task, read its report. Not thread-safe; the pool gives it one caller."""

    def __init__(self, config: InProcessConfig) -> None:
        self.config = config
        self._cmd = build_command(config)
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 -- open for the worker's whole life
        self._proc: subprocess.Popen[bytes] | None = None
        self.tasks = 0
        self.hello: dict[str, Any] = {}
        self._cgroup: PidsCgroup | None = None

    @property
    def process_limit(self) -> str:
        """What caps the processes: ``pids_cgroup``, ``rlimit_nproc``, or ``none`` (root, no cgroup)."""
        if self._cgroup is not None:
            return "pids_cgroup"
        return "rlimit_nproc" if os.geteuid() != 0 else "none"

    def start(self, timeout_s: float) -> None:
        self._cgroup = PidsCgroup.create(self.config.max_processes)
        self._proc = subprocess.Popen(
            self._cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            bufsize=0,
            close_fds=True,
            start_new_session=True,
            preexec_fn=None if self._cgroup is None else self._cgroup.join,
        )
        try:
            hello = self._recv(time.monotonic() + timeout_s)
        except (WorkerTimeout, WorkerDied) as exc:
            hello, reason = {}, str(exc)
        else:
            reason = "it exited during start-up"
        if not hello.get("ready"):
            self.kill()
            self._stderr.seek(0)
            detail = self._stderr.read(4000).decode("utf-8", "replace").strip()
            suffix = f": {detail}" if detail else ""
            raise BackendUnavailable(f"in-process worker failed to start ({reason}){suffix}")
        self.hello = hello

    def request(self, task: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        assert self._proc is not None and self._proc.stdin is not None
        nproc = None if self._cgroup is not None else self.config.max_processes
        try:
            self._proc.stdin.write(_frame({**task, "nproc": nproc}))
        except OSError as exc:
            raise WorkerDied(f"the in-process worker is gone: {exc}") from None
        report = self._recv(time.monotonic() + timeout_s)
        self.tasks += 1
        report["process_limit"] = self.process_limit
        return report

    def _recv(self, deadline: float) -> dict[str, Any]:
        head = self._read(4, deadline)
        (size,) = struct.unpack(">I", head)
        if size > MAX_REPORT_BYTES:
            raise WorkerDied(f"the in-process worker sent a {size}-byte report")
        report = json.loads(self._read(size, deadline))
        if not isinstance(report, dict):
            raise WorkerDied("the in-process worker sent a malformed report")
        return report

    def _read(self, n: int, deadline: float) -> bytes:
        assert self._proc is not None and self._proc.stdout is not None
        out, buf = self._proc.stdout, b""
        while len(buf) < n:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([out.fileno()], [], [], remaining)[0]:
                raise WorkerTimeout("no answer from the in-process worker before the deadline")
            chunk = out.read(n - len(buf))
            if not chunk:
                raise WorkerDied("the in-process worker exited")
            buf += chunk
        return buf

    def kill(self) -> None:
        if self._proc is None:
            return
        stop_process(self._proc)
        self._proc = None
        if self._cgroup is not None:
            self._cgroup.remove()
            self._cgroup = None
