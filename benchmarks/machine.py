"""The benchmarks' result files record their machine and run through the package's own record."""

from coding_framework.evaluation.machine import (
    LoadMonitor,
    cpu_name,
    package_versions,
    run_record,
    write_result,
)

__all__ = ["LoadMonitor", "cpu_name", "package_versions", "run_record", "write_result"]
