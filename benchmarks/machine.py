"""The benchmarks' result files record their machine and run through the package's own record."""

import subprocess
from pathlib import Path

from coding_framework.evaluation.machine import (
    LoadMonitor,
    cpu_name,
    package_versions,
    run_record,
    write_result,
)

__all__ = ["LoadMonitor", "anchor_versions", "cpu_name", "package_versions", "run_record", "write_result"]


def anchor_versions(python: str | Path, *packages: str) -> dict[str, str]:
    """The versions of ``packages`` in an anchor's own interpreter (its venv), for ``extra_packages``:
    the record's own versions are this process's, not the anchor's."""
    code = "import sys; from importlib.metadata import version; print(*map(version, sys.argv[1:]))"
    out = subprocess.run([str(python), "-c", code, *packages], capture_output=True, text=True, check=True)
    venv = Path(python).parent.parent
    return {f"{name} ({venv})": version for name, version in zip(packages, out.stdout.split(), strict=True)}
