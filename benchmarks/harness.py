"""What every benchmark imports to file a result: where results go and the package's one writer.

    from benchmarks.harness import RESULTS, LoadMonitor, write_result

    with LoadMonitor() as load:
        figures = measure()
    write_result(RESULTS / "name.json", figures, load, model_dir=model)

``write_result`` and ``LoadMonitor`` are ``coding_framework.evaluation.machine``'s: the record (command, CPU,
load, model sha256, package versions) is the package's, so a benchmark's file and ``quickstart
--results-dir``'s carry the same one. ``anchor_versions`` adds an anchor's own venv's versions.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from coding_framework.evaluation.machine import (
    RECORD_KEYS,
    LoadMonitor,
    cpu_name,
    model_sha256,
    write_result,
)

__all__ = [
    "RECORD_KEYS", "RESULTS", "ROOT", "LoadMonitor", "anchor_versions", "cpu_name", "model_sha256",
    "write_result",
]

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def anchor_versions(python: str | Path, *packages: str) -> dict[str, str]:
    """The versions of ``packages`` in an anchor's own interpreter (its venv), for ``extra_packages``:
    the record's own versions are this process's, not the anchor's."""
    code = "import sys; from importlib.metadata import version; print(*map(version, sys.argv[1:]))"
    out = subprocess.run([str(python), "-c", code, *packages], capture_output=True, text=True, check=True)
    venv = Path(python).parent.parent
    return {f"{name} ({venv})": version for name, version in zip(packages, out.stdout.split(), strict=True)}

