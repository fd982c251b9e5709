"""Compiling C++ stdin/stdout submissions (CodeContests) on the host; the binary then runs in the sandbox.

The compiler only reads the source and writes a binary into a private temporary folder; nothing of the
submission executes here. ``g++`` is looked up on PATH; without it every C++ sample gets a
:class:`CompileError` that says so.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

COMPILE_TIMEOUT_S = 60.0
FLAGS = ("-O2", "-std=gnu++17", "-pipe")


class CompileError(Exception):
    """The program did not compile, or no compiler exists; the message is the reason."""


def compiler() -> str | None:
    return shutil.which("g++")


def compile_cpp(source: str, timeout_s: float = COMPILE_TIMEOUT_S) -> bytes:
    """The executable ``g++`` builds from ``source`` (dynamically linked against the system libraries)."""
    gxx = compiler()
    if gxx is None:
        raise CompileError("no C++ compiler: g++ is not on PATH, so C++ samples cannot be graded here")
    with tempfile.TemporaryDirectory(prefix="cf-cpp-") as tmp:
        out = Path(tmp) / "prog"
        try:
            proc = subprocess.run(
                [gxx, *FLAGS, "-x", "c++", "-", "-o", str(out)],
                input=source.encode(),
                capture_output=True,
                timeout=timeout_s,
                cwd=tmp,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise CompileError(f"compilation took longer than {timeout_s:g}s") from None
        if proc.returncode != 0:
            raise CompileError(proc.stderr.decode("utf-8", "replace").strip()[-1500:] or "g++ failed")
        return out.read_bytes()
