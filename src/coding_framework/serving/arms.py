"""Per-version metrics of a rollout arm: requests, errors, latency percentiles, tokens, grades.

Recording is O(1) (it runs on every request); percentiles are computed when a snapshot is asked for, over
a bounded window of the latest latencies.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

import numpy as np

__all__ = ["Arm"]

LATENCY_WINDOW = 4096


class Arm:
    """Counters of one version; ``recent_errors`` covers the last ``error_window`` requests, the latency
    percentiles the latest successful ones."""

    def __init__(self, error_window: int) -> None:
        self.requests = 0
        self.errors = 0
        self.tokens = 0
        self.graded = 0
        self.passed = 0
        self._latencies: deque[float] = deque(maxlen=LATENCY_WINDOW)
        self._recent: deque[bool] = deque(maxlen=error_window)
        self._lock = threading.Lock()

    def record(self, *, latency_s: float, error: bool, tokens: int) -> None:
        with self._lock:
            self.requests += 1
            self.errors += int(error)
            self.tokens += tokens
            self._recent.append(error)
            if not error:
                self._latencies.append(latency_s)

    def record_grade(self, passed: bool) -> None:
        with self._lock:
            self.graded += 1
            self.passed += int(passed)

    @property
    def window(self) -> int:
        return self._recent.maxlen or 0

    @property
    def recent_errors(self) -> int:
        return sum(self._recent)

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.graded if self.graded else None

    def absorb(self, other: Arm) -> None:
        """Add ``other``'s counts (a champion's history as the baseline of an `immediate` rollout)."""
        with self._lock:
            self.requests += other.requests
            self.errors += other.errors
            self.tokens += other.tokens
            self.graded += other.graded
            self.passed += other.passed
            self._latencies.extend(other._latencies)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            latencies = np.fromiter(self._latencies, dtype=float)
        percentiles = (
            dict(
                zip(
                    ("p50", "p90", "p99"),
                    (1000 * np.percentile(latencies, [50, 90, 99])).tolist(),
                    strict=True,
                )
            )
            if latencies.size
            else {"p50": None, "p90": None, "p99": None}
        )
        return {
            "requests": self.requests,
            "errors": self.errors,
            "error_rate": self.errors / self.requests if self.requests else None,
            "graded": self.graded,
            "passed": self.passed,
            "pass_rate": self.pass_rate,
            "latency_ms": percentiles,
            "tokens": self.tokens,
        }
