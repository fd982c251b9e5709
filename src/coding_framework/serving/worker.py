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


class WorkerProcess:
    """``python -m coding_framework.serving.worker MODEL_DIR PORT``; ``start`` waits for its /health."""

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
        env.pop("CODING_FRAMEWORK_API_KEY", None)
        env.pop("CODING_FRAMEWORK_ADMIN_KEY", None)
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "coding_framework.serving.worker", str(self.model_dir), str(self.port)],
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


def main() -> None:
    from coding_framework.config.serving import LimitsConfig, PoolConfig, ServingConfig
    from coding_framework.serving.server import run_server

    model_dir, port = sys.argv[1], int(sys.argv[2])
    # The parent server admits, queues and rate-limits; the worker only answers what it is sent.
    config = ServingConfig(
        model=model_dir,
        port=port,
        engine="local",
        limits=LimitsConfig(rate_per_s=1e9, rate_burst=1 << 30),
        pool=PoolConfig(max_concurrency=1024, queue_size=4096),
    )
    run_server(config)


if __name__ == "__main__":
    main()
