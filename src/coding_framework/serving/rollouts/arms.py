"""Per-version metrics of a rollout arm: requests, errors, latency percentiles, tokens, grades.

Recording is O(1) (it runs on every request); percentiles are computed when a snapshot is asked for, over
a bounded window of the latest latencies. Grades are kept per source (``client``: a client's /v1/solve
tests; ``probe``: the rollout's probe set) and per outcome (`rollouts.outcomes.Outcome`); ``graded`` and
``passed`` are the client's, ``probe_graded`` and ``probe_passed`` the probes'; ``probe_errors`` counts
probes that got no answer to grade (the version failed the request).
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

import numpy as np

from coding_framework.serving.rollouts.outcomes import SOURCES, Outcome, Source

__all__ = ["Arm"]

LATENCY_WINDOW = 4096


class Arm:
    """Counters of one version; ``recent_errors`` covers the last ``error_window`` requests, the latency
    percentiles the latest successful ones."""

    def __init__(self, error_window: int) -> None:
        self.requests = 0
        self.errors = 0
        self.tokens = 0
        self.probe_errors = 0
        self.outcomes: dict[Source, dict[Outcome, int]] = {s: dict.fromkeys(Outcome, 0) for s in SOURCES}
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

    def record_grade(self, outcome: Outcome, source: Source = "client") -> None:
        with self._lock:
            self.outcomes[source][outcome] += 1

    def record_probe_error(self) -> None:
        with self._lock:
            self.probe_errors += 1

    def graded_by(self, source: Source) -> int:
        return sum(self.outcomes[source].values())

    def passed_by(self, source: Source) -> int:
        return self.outcomes[source][Outcome.PASSED]

    @property
    def graded(self) -> int:
        return self.graded_by("client")

    @property
    def passed(self) -> int:
        return self.passed_by("client")

    @property
    def all_graded(self) -> int:
        return sum(self.graded_by(s) for s in SOURCES)

    @property
    def window(self) -> int:
        return self._recent.maxlen or 0

    @property
    def recent_errors(self) -> int:
        return sum(self._recent)

    def rates(self, outcome: Outcome = Outcome.PASSED) -> str:
        """``k/n`` of ``outcome`` per source with grades, e.g. ``3/40 client, 0/12 probe``."""
        parts = [f"{self.outcomes[s][outcome]}/{self.graded_by(s)} {s}" for s in SOURCES if self.graded_by(s)]
        return ", ".join(parts) or "0/0"

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.graded if self.graded else None

    def absorb(self, other: Arm) -> None:
        """Add ``other``'s counts (a champion's history as the baseline of an `immediate` rollout)."""
        with self._lock:
            self.requests += other.requests
            self.errors += other.errors
            self.tokens += other.tokens
            self.probe_errors += other.probe_errors
            for source, counts in other.outcomes.items():
                for outcome, n in counts.items():
                    self.outcomes[source][outcome] += n
            self._latencies.extend(other._latencies)

    def state(self) -> dict[str, Any]:
        """The counts, as the state file keeps them (latencies are not kept)."""
        with self._lock:
            return {"requests": self.requests, "errors": self.errors, "tokens": self.tokens,
                    "probe_errors": self.probe_errors, "recent": list(self._recent),
                    "outcomes": {s: {o.value: n for o, n in c.items()} for s, c in self.outcomes.items()}}

    @classmethod
    def from_state(cls, error_window: int, data: dict[str, Any]) -> Arm:
        arm = cls(error_window)
        arm.requests, arm.errors, arm.tokens = data["requests"], data["errors"], data["tokens"]
        arm.probe_errors = data.get("probe_errors", 0)
        arm._recent.extend(data["recent"])
        for source, counts in data["outcomes"].items():
            arm.outcomes[source].update({Outcome(o): n for o, n in counts.items()})
        return arm

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            latencies = np.fromiter(self._latencies, dtype=float)
            outcomes = {s: {o.value: n for o, n in c.items()} for s, c in self.outcomes.items()}
        percentiles = (
            dict(zip(("p50", "p90", "p99"), (1000 * np.percentile(latencies, [50, 90, 99])).tolist(),
                     strict=True))
            if latencies.size
            else {"p50": None, "p90": None, "p99": None}
        )
        probe_graded = self.graded_by("probe")
        probe = self.outcomes["probe"]
        return {
            "requests": self.requests,
            "errors": self.errors,
            "error_rate": self.errors / self.requests if self.requests else None,
            "graded": self.graded,
            "passed": self.passed,
            "pass_rate": self.pass_rate,
            "probe_graded": probe_graded,
            "probe_passed": self.passed_by("probe"),
            "probe_pass_rate": self.passed_by("probe") / probe_graded if probe_graded else None,
            "probe_unparseable": probe[Outcome.UNPARSEABLE],
            "probe_crashed": probe[Outcome.CRASHED],
            "probe_timed_out": probe[Outcome.TIMED_OUT],
            "probe_errors": self.probe_errors,
            "outcomes": outcomes,
            "latency_ms": percentiles,
            "tokens": self.tokens,
        }
