"""The in-process tier: unittest-format tasks (BigCodeBench) whose tests run in the solution's process.

Each task runs in a fresh forked process inside a bubblewrap sandbox that mounts the execution
environment read-only; see docs/trust_tiers.md for what this tier can and cannot promise.
"""

from coding_framework.sandbox.inprocess.pool import (
    InProcessSandbox,
    UnittestTask,
    from_report,
    official_details,
    official_status,
)
from coding_framework.sandbox.inprocess.worker import build_command, env_python

__all__ = [
    "InProcessSandbox",
    "UnittestTask",
    "build_command",
    "env_python",
    "from_report",
    "official_details",
    "official_status",
]
