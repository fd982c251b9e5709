"""Compiling C++ stdin/stdout submissions (CodeContests) inside bubblewrap; the binary runs in the sandbox.

The source is untrusted even before it runs: ``#include "/etc/shadow"`` or ``asm(".incbin ...")`` would read
host files into the error message or the binary, and template or preprocessor bombs burn CPU and memory. So
``g++`` runs in its own bwrap namespaces: no network, a private PID/IPC/UTS/user namespace, uid ``nobody``,
a scrubbed environment, and a read-only view of only the compiler's own directories (``/usr/bin``,
``/usr/lib*``, ``/usr/libexec``, ``/usr/include``; no ``/etc``, ``/root``, ``/home``, project or data files,
no ``/proc``). Its only writable place is a private size-capped tmpfs, from which the binary comes back on
stdout. Rlimits cap CPU time, address space and file size, the wall-clock timeout kills the namespace, and
the error text is cut short. ``g++`` is looked up on PATH and must live under ``/usr``; without it every C++
sample gets a :class:`CompileError` that says so.
"""

from __future__ import annotations

import math
import os
import shlex
import shutil
import subprocess

from coding_framework.sandbox.backends.base import BackendUnavailable
from coding_framework.sandbox.backends.bwrap import CONFINEMENT, bwrap_binary

COMPILE_TIMEOUT_S = 60.0
FLAGS = ("-O2", "-std=gnu++17", "-pipe", "-fmax-errors=20")
ADDRESS_SPACE_BYTES = 2 << 30
MAX_BINARY_BYTES = 256 << 20
TMP_BYTES = 512 << 20
MESSAGE_CHARS = 1500
COMPILER_DIRS = ("/usr/bin", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libexec", "/usr/include")
OUT = "/tmp/prog"


class CompileError(Exception):
    """The program did not compile, or no compiler exists; the message is the reason."""


def compiler() -> str | None:
    return shutil.which("g++")


def _root_args() -> list[str]:
    """Read-only binds of the compiler's directories, and the host's /bin, /lib* links into them."""
    args: list[str] = []
    for path in COMPILER_DIRS:
        if os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for top in ("/bin", "/lib", "/lib32", "/lib64"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    return args


def build_command(gxx: str, timeout_s: float) -> list[str]:
    """The bwrap command line that compiles stdin with ``gxx`` and writes the executable to stdout."""
    limits = [
        f"ulimit -t {math.ceil(timeout_s) + 1}",  # CPU seconds, a backstop under the wall-clock timeout
        f"ulimit -v {ADDRESS_SPACE_BYTES >> 10}",
        f"ulimit -f {MAX_BINARY_BYTES >> 10}",
    ]
    script = " && ".join([*limits, shlex.join([gxx, *FLAGS, "-x", "c++", "-", "-o", OUT]), f"cat {OUT}"])
    return [
        bwrap_binary(),
        *CONFINEMENT,
        *_root_args(),
        "--dev",
        "/dev",
        "--size",
        str(TMP_BYTES),
        "--tmpfs",
        "/tmp",
        "--setenv",
        "PATH",
        "/usr/bin:/bin",
        "--setenv",
        "LC_ALL",
        "C",
        "--chdir",
        "/tmp",
        "/bin/sh",
        "-c",
        script,
    ]


def _compiler_in_view() -> str:
    gxx = compiler()
    if gxx is None:
        raise CompileError("no C++ compiler: g++ is not on PATH, so C++ samples cannot be graded here")
    real = os.path.realpath(gxx)
    if not real.startswith("/usr/"):
        raise CompileError(f"g++ at {real} is outside /usr, where the compile sandbox cannot see it")
    return real


def compile_cpp(source: str, timeout_s: float = COMPILE_TIMEOUT_S) -> bytes:
    """The executable ``g++`` builds from ``source`` (dynamically linked against the system libraries)."""
    gxx = _compiler_in_view()
    try:
        cmd = build_command(gxx, timeout_s)
    except BackendUnavailable as exc:
        raise CompileError(f"cannot sandbox the compiler: {exc}") from None
    try:
        proc = subprocess.run(
            cmd, input=source.encode(), capture_output=True, timeout=timeout_s, check=False, close_fds=True,
            env={},  # bwrap stays the sandbox's PID 1: the host's variables must not reach it either
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise CompileError(f"compilation took longer than {timeout_s:g}s") from None
    if proc.returncode != 0 or not proc.stdout:
        message = proc.stderr.decode("utf-8", "replace").strip()
        raise CompileError(message[-MESSAGE_CHARS:] or f"g++ failed (exit code {proc.returncode})")
    return proc.stdout
