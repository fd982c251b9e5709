"""MLflow's own system-metrics monitor records CPU and memory use in a tracker's run (SQLite store)."""

from __future__ import annotations

import time

import pytest

from coding_framework.config.training import TrackingConfig
from coding_framework.training.run.tracking import MLflowTracker

pytestmark = pytest.mark.slow  # an MLflow SQLite store takes seconds to create


def test_an_open_run_records_system_metrics_until_it_finishes(tmp_path) -> None:
    tracker = MLflowTracker(TrackingConfig(experiment="sysmetrics"), tmp_path, system_metrics_interval_s=0.2)

    def logged() -> int:
        return len(tracker.client.get_metric_history(tracker.run_id, "system/cpu_utilization_percentage"))

    # until two samples are in (on a loaded machine the monitor's thread may take seconds to get going);
    # the deadline only keeps a broken monitor from hanging the test
    deadline = time.monotonic() + 60.0
    while logged() < 2 and time.monotonic() < deadline:
        end = time.monotonic() + 0.2
        while time.monotonic() < end:  # keep a core busy so the samples are not all idle
            sum(i * i for i in range(10_000))
    tracker.finish()
    assert tracker.system_metrics is None
    run = tracker.client.get_run(tracker.run_id)
    assert run.info.status == "FINISHED"
    cpu = tracker.client.get_metric_history(tracker.run_id, "system/cpu_utilization_percentage")
    memory = tracker.client.get_metric_history(tracker.run_id, "system/system_memory_usage_megabytes")
    assert len(cpu) >= 2 and [m.step for m in cpu] == list(range(len(cpu)))
    assert all(0 <= m.value <= 100 for m in cpu) and all(m.value > 0 for m in memory)


def test_system_metrics_can_be_turned_off(tmp_path) -> None:
    tracker = MLflowTracker(TrackingConfig(experiment="quiet"), tmp_path, system_metrics_interval_s=None)
    tracker.finish()
    assert not [k for k in tracker.client.get_run(tracker.run_id).data.metrics if k.startswith("system/")]
