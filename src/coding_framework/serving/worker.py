"""A replica in its own process: this server on the local engine, one model directory, loopback only.

``--engine process`` runs each replica of a version this way, so a replica that dies (``kill -9``) is one
process the pool ejects and restarts while the other replicas keep answering.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from coding_framework.llm.base import EngineError
from coding_framework.llm.processes import stop_group, wait_healthy
from coding_framework.llm.vllm_server import free_port

__all__ = ["KEY_ENVS", "WorkerProcess"]

# The server's keys stay with the parent: a worker answers loopback only, and only its parent.
CHILD = "coding_framework.serving.worker_main"
KEY_ENVS = ("CODING_FRAMEWORK_API_KEY", "CODING_FRAMEWORK_ADMIN_KEY")


class WorkerProcess:
    """``python -m coding_framework.serving.worker_main MODEL_DIR PORT``; ``start`` waits for its /health."""

    def __init__(self, model_dir: Path, startup_timeout_s: float = 300.0) -> None:
        self.model_dir, self.startup_timeout_s = model_dir, startup_timeout_s
        self.port = free_port()
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def start(self) -> WorkerProcess:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        for key in KEY_ENVS:
            env.pop(key, None)
        self._proc = subprocess.Popen(
            [sys.executable, "-m", CHILD, str(self.model_dir), str(self.port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            wait_healthy(self.url, self._proc, self.startup_timeout_s, f"the worker for {self.model_dir}")
        except EngineError:
            self.stop()
            raise
        return self

    def stop(self, timeout_s: float = 30.0) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            stop_group(proc, timeout_s)

