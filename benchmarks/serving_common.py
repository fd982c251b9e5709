"""Shared by the serving benchmarks: the CPU's name, a served `coding-framework serve` in a subprocess,
percentiles, and where results go (through the package's ``write_result``, with the machine record)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from coding_framework.evaluation import machine
from coding_framework.evaluation.machine import LoadMonitor, cpu_name
from coding_framework.llm.processes import stop_group, wait_healthy

__all__ = ["RESULTS", "ROOT", "LoadMonitor", "Served", "cpu_name", "percentile", "write_result"]

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))]


def write_result(
    name: str, figures: dict[str, Any], load: LoadMonitor, model_dir: str | Path | None = None
) -> Path:
    """``results/<name>.json``: ``figures`` with the machine record (``machine.write_result``)."""
    return machine.write_result(RESULTS / f"{name}.json", figures, load, model_dir=model_dir)


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
