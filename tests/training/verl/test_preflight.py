"""The CPU preflight on the embedded model: verl's own AgentLoopManager, 2 AgentLoopWorker actors and a
token server on a real local Ray cluster (one per module), then verl's advantages and our audit."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from mlflow.tracking import MlflowClient

from coding_framework.logs import get_logger
from coding_framework.training.verl.preflight import (
    REPORT_FILE,
    PreflightConfig,
    PreflightReport,
    ray_session,
    run_preflight,
)

pytestmark = pytest.mark.slow
log = get_logger(__name__)

N, K, WORKERS = 2, 2, 2


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[None]:
    with ray_session(cpus=2):
        yield


@pytest.fixture(scope="module")
def preflight(ray_cluster: None, tmp_path_factory: pytest.TempPathFactory) -> tuple[PreflightReport, Path]:
    run_dir = tmp_path_factory.mktemp("preflight")
    stages: list[str] = []
    report = run_preflight(PreflightConfig(problems=N, n=K, workers=WORKERS), run_dir, on_stage=stages.append)
    assert stages == ["config", "mlflow", "ray_start", "server_start", "manager_start", "data", "generate",
                      "advantage", "audit"]
    log.info("verl_preflight_measured", engine="local", timings=report.timings, episodes_s=report.episodes_s,
             verl_share=report.verl_share, seconds=report.seconds, audit=report.audit)
    return report, run_dir


def test_every_episode_comes_back_token_exact(preflight: tuple[PreflightReport, Path]) -> None:
    report, _ = preflight
    assert report.trajectories == N * K and report.ray_workers == WORKERS
    assert report.drift_tokens == 0 and report.audit.startswith("audit passed")
    assert report.masks_consistent and 0 < report.trained_tokens <= report.response_tokens
    assert report.advantages_finite and report.advantage_estimator == "grpo"
    assert len(report.rewards) == N * K and report.reward_mean == pytest.approx(sum(report.rewards) / (N * K))
    assert not any("positions" in p or "use_v1" in p for p in report.problems_found)


def test_the_time_is_split_between_verl_and_the_episodes(preflight: tuple[PreflightReport, Path]) -> None:
    report, _ = preflight
    t = report.timings
    assert 0 < report.episodes_s <= t["generate"]
    assert report.verl_share == pytest.approx(report.verl_machinery_s
                                              / (report.verl_machinery_s + report.episodes_s), abs=1e-3)
    assert report.seconds >= sum(v for k, v in t.items() if k != "audit")


def test_the_report_and_system_metrics_are_in_the_run_dir(preflight: tuple[PreflightReport, Path]) -> None:
    report, run_dir = preflight
    saved = json.loads((run_dir / REPORT_FILE).read_text())
    assert saved["drift_tokens"] == 0 and saved["trajectories"] == N * K
    uri = f"sqlite:///{run_dir / 'mlflow.db'}"
    run = MlflowClient(uri).get_run(report.mlflow_run_id)
    assert run.info.status == "FINISHED" and run.data.params["workers"] == str(WORKERS)
    assert run.data.metrics["drift_tokens"] == 0 and run.data.metrics["time/generate"] > 0
    assert "system/cpu_utilization_percentage" in run.data.metrics
    assert "system/system_memory_usage_megabytes" in run.data.metrics


def test_advantages_follow_verls_grpo(preflight: tuple[PreflightReport, Path]) -> None:
    report, _ = preflight
    # verl's GRPO: (r - mean) / (std + eps) per group of K samples (unbiased std)
    for g in range(N):
        group = torch.tensor(report.rewards[g * K : (g + 1) * K])
        if float(group.std()) > 0:
            expected = ((group - group.mean()) / (group.std() + 1e-6)).tolist()
            assert report.advantages[g * K : (g + 1) * K] == pytest.approx(expected, abs=1e-4)
        else:
            assert all(math.isclose(a, 0.0, abs_tol=1e-6)
                       for a in report.advantages[g * K : (g + 1) * K])
