"""Shared by the serving benchmarks: a served `coding-framework serve` in a subprocess, and percentiles."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from typing import Any

import yaml

from benchmarks.harness import ROOT
from coding_framework.llm.processes import stop_group, wait_healthy

__all__ = ["Served", "percentile"]


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile of ``values`` (nearest rank, no interpolation)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))]



class Served:
    """``coding-framework serve`` with a ServingConfig (as a dict) in its own process; stopped on exit."""

    def __init__(self, config: dict[str, Any], port: int, startup_timeout_s: float = 600.0) -> None:
        self.port, self.startup_timeout_s = port, startup_timeout_s
        self._file = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)  # noqa: SIM115
        yaml.safe_dump({**config, "port": port}, self._file)
        self._file.close()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Served:
        env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "coding_framework.cli", "serve", "--config", self._file.name],
            env=env,
            start_new_session=True,
        )
        wait_healthy(self.url, self.proc, self.startup_timeout_s, "the server")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            stop_group(self.proc, 60)
        os.unlink(self._file.name)
