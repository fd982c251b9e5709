"""Servers the project runs as child processes (vLLM, serving workers, benchmark servers): wait until one
answers ``/health``, and stop its whole process group."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from typing import Any

import httpx

from coding_framework.llm.base import EngineError


def wait_healthy(
    url: str,
    proc: subprocess.Popen[Any],
    timeout_s: float,
    name: str,
    detail: Callable[[], str] = str,
    poll_s: float = 0.2,
) -> None:
    """Return once ``url``/health answers 200. ``EngineError`` when ``proc`` exits first or ``timeout_s``
    passes; ``detail()`` is appended to the message (a log tail, say)."""
    began = time.monotonic()
    while time.monotonic() - began < timeout_s:
        if proc.poll() is not None:
            raise EngineError(f"{name} exited with code {proc.returncode} while starting{detail()}")
        with contextlib.suppress(httpx.HTTPError):  # not listening yet
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        time.sleep(poll_s)
    raise EngineError(f"{name} did not answer {url}/health within {timeout_s:g} s{detail()}")


def stop_group(proc: subprocess.Popen[Any], timeout_s: float = 30.0) -> None:
    """SIGTERM the process group ``proc`` leads (it was started with ``start_new_session``), then SIGKILL."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


__all__ = ["stop_group", "wait_healthy"]
