"""The in-process tier: unittest-format tasks (BigCodeBench) whose tests run in the solution's process.

Each task runs in a fresh forked process inside a bubblewrap sandbox that mounts the execution
environment read-only; workers run in the shared pool (``sandbox/pool.py``). See docs/trust_tiers.md for
what this tier can and cannot promise.
"""

from coding_framework.sandbox.inprocess.report import from_report, official_details, official_status
from coding_framework.sandbox.inprocess.tier import InProcessSandbox, UnittestTask
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
