"""What every benchmark result records about the machine it was measured on."""

from __future__ import annotations

import os
from pathlib import Path


def cpu_name() -> str:
    """The CPU model and logical CPU count, from /proc/cpuinfo (as `lscpu` reports it)."""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return f"{line.split(':', 1)[1].strip()} ({os.cpu_count()} logical CPUs)"
    return "unknown CPU"
