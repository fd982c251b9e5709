"""Configuration of the in-process tier: BigCodeBench tasks, whose tests run in the solution's process."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field

from coding_framework.config.loader import StrictModel

VENV_ENV_VAR = "CODING_FRAMEWORK_BIGCODEBENCH_VENV"


def default_env_venv() -> str:
    """``$CODING_FRAMEWORK_BIGCODEBENCH_VENV``, else ``.venv-bigcodebench`` at the repository root."""
    return os.environ.get(VENV_ENV_VAR) or str(Path(__file__).resolve().parents[3] / ".venv-bigcodebench")


class InProcessConfig(StrictModel):
    """How unittest-format tasks (BigCodeBench) run: one forked process per task, in a bwrap sandbox that
    mounts the execution environment read-only. Limits default to the official harness's
    (``bigcodebench.evaluate``: 30 GiB address space and data, 10 MiB stack, 240 s per task)."""

    env_venv: str = Field(
        default_factory=default_env_venv,
        description="Virtual environment with the tasks' libraries, built by "
        f"scripts/setup_bigcodebench_env.sh; defaults to ${VENV_ENV_VAR}, else .venv-bigcodebench at the "
        "repository root.",
    )
    workers: int | None = Field(
        None,
        ge=1,
        le=64,
        description="Concurrent task sandboxes; defaults to the CPU count (tasks run CPU-bound code).",
    )
    timeout_s: float = Field(
        240.0,
        gt=0,
        le=3600,
        description="Time for one task's whole TestCases suite (the official TIMEOUT_LIMIT); the process is "
        "killed one second after it, as the official harness joins its process.",
    )
    memory_mb: int = Field(30 * 1024, ge=64, description="RLIMIT_AS of the task process (official: 30 GiB).")
    data_mb: int = Field(30 * 1024, ge=64, description="RLIMIT_DATA of the task process (official: 30 GiB).")
    stack_mb: int = Field(10, ge=1, description="RLIMIT_STACK of the task process (official: 10 MiB).")
    file_size_mb: int = Field(256, ge=1, description="Largest file a task may write (RLIMIT_FSIZE).")
    tmp_size_mb: int = Field(1024, ge=16, description="Size of the sandbox's private writable /tmp.")
    max_processes: int = Field(
        512,
        ge=8,
        description="Processes and threads of one worker's sandbox together (a pids cgroup; RLIMIT_NPROC "
        "where no cgroup can be made, which does not bind root). The official harness has no such cap.",
    )
    output_bytes: int = Field(16_384, ge=256, description="Task stdout/stderr kept in the result.")
    calibrated: bool = Field(
        True,
        description="Run each solution after the task's code_prompt with a `pass` body, as the official "
        "harness does by default (--calibrated), so missing imports do not fail a correct body.",
    )
    preload: list[str] = Field(
        default_factory=lambda: ["numpy", "pandas", "matplotlib", "matplotlib.pyplot", "scipy", "sklearn"],
        description="Modules each worker imports once before forking tasks, so a task does not pay for "
        "them; one that fails to import is skipped.",
    )
    recycle_after: int = Field(200, ge=1, description="Restart a worker after this many tasks.")

    @property
    def effective_workers(self) -> int:
        return self.workers or max(1, os.cpu_count() or 1)
