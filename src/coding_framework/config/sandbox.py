"""Sandbox configuration: which backend runs untrusted code, and the limits every run gets."""

from __future__ import annotations

import os

from pydantic import Field

from coding_framework.config.inprocess import InProcessConfig
from coding_framework.config.loader import StrictModel


class ResourceLimits(StrictModel):
    """Limits applied to each untrusted run."""

    timeout_s: float = Field(
        3.0, gt=0, le=3600, description="Wall-clock budget for one run (load + all tests)."
    )
    cpu_s: float | None = Field(
        None, gt=0, description="CPU-seconds limit (RLIMIT_CPU); defaults to timeout_s + 1."
    )
    memory_mb: int = Field(
        1024, ge=32, description="Address-space limit of the untrusted process (RLIMIT_AS)."
    )
    file_size_mb: int = Field(
        16, ge=1, description="Largest file the code may write, stdout/stderr included."
    )
    output_bytes: int = Field(
        16_384, ge=256, description="stdout/stderr kept in the result; the rest is cut."
    )
    tmp_size_mb: int = Field(64, ge=1, description="Size of the private writable tmpfs.")
    max_result_bytes: int = Field(8 << 20, ge=1024, description="Largest encoded return value of one call.")

    @property
    def effective_cpu_s(self) -> float:
        return self.cpu_s if self.cpu_s is not None else self.timeout_s + 1.0


class LimitLearningConfig(StrictModel):
    """Per-problem limits learned from honest runtimes (`grading.limits.LimitLearner`), never above `limits`.

    Off by default: a learned limit is tighter than the configured one, so it changes which slow but
    correct programs pass; published scores stay comparable with harnesses that use one flat timeout.
    Turn it on for training rewards, where sandbox time spent waiting on timeouts is the cost.
    """

    enabled: bool = Field(False, description="Grade each problem under its learned limits.")
    repetitions: int = Field(
        3, ge=1, le=20, description="Runs of each reference solution, under the ceilings, before a problem's "
        "limits are set (once per problem per Grader)."
    )
    time_margin: float = Field(
        4.0, ge=1.0, description="Learned timeout = time_margin x the slowest honest run seen + time_slack_s."
    )
    time_slack_s: float = Field(0.5, ge=0, description="Seconds added to every learned timeout.")
    time_floor_s: float = Field(
        1.0, gt=0, description="No learned timeout is shorter (start-up and scheduling noise under load)."
    )
    memory_floor_mb: int = Field(
        256, ge=32, description="Memory cap tried for each problem: kept when every reference run passes "
        "under it, otherwise the problem keeps `limits.memory_mb`."
    )


class SandboxConfig(StrictModel):
    """How and where untrusted code runs."""

    backend: str = Field(
        "process",
        description="A registered sandbox backend (`coding_framework.sandbox.backends.BACKENDS`), checked "
        "when the Sandbox is built: `process`: bwrap-isolated fork server (default); `docker`: one container "
        "per worker.",
    )
    workers: int | None = Field(
        None,
        ge=1,
        le=256,
        description="Concurrent sandboxes; defaults to 8 x CPU cores, at most 64: a run that waits (on a "
        "timeout, on I/O) holds a worker, not a core.",
    )
    limits: ResourceLimits = Field(default_factory=ResourceLimits)
    docker_image: str = Field("python:3.11-slim", description="Image for the docker backend; needs python3.")
    recycle_after: int = Field(
        500, ge=1, description="Restart a worker after this many runs, so no state builds up in a long job."
    )
    limit_learning: LimitLearningConfig = Field(default_factory=LimitLearningConfig)
    judge_memory_mb: int | None = Field(
        None,
        ge=64,
        description="Address-space limit on a `process` worker's whole tree (judge, zygote, runs); null: "
        "only the per-run limits. For tests from clients, since the judge runs tests in its own process.",
    )
    inprocess: InProcessConfig = Field(
        default_factory=InProcessConfig,
        description="The in-process tier for unittest-format tasks (BigCodeBench); see docs/trust_tiers.md.",
    )

    @property
    def effective_workers(self) -> int:
        return self.workers or min(64, max(2, 8 * (os.cpu_count() or 1)))
