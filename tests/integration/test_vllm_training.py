"""Training through the real vLLM rollout engine: rollouts sampled on a vLLM-CPU server, each update synced
to it as a new LoRA adapter, the auditor's teacher-forced check at 0 offending tokens (fp32 on both sides),
and `eval.engine: rollout` evaluating the newest policy on that server."""

from __future__ import annotations

from pathlib import Path

import pytest
from safetensors.torch import load_file

from coding_framework.config import load_config, shipped_config
from coding_framework.config.training import TrainingConfig
from coding_framework.llm.base import TokenEngine
from coding_framework.training.rollouts.source import BatchSource
from coding_framework.training.trainer import Trainer

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_two_steps_on_vllm_sync_adapters_audit_clean_and_evaluate_there(
    vllm_venv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = load_config(TrainingConfig, shipped_config("quickstart_lora"), overrides={
        "steps": 2, "threads": 1,
        "data.heldout_limit": 4,
        "rollout.engine": "vllm", "rollout.problems_per_step": 2, "rollout.group_size": 4,
        "rollout.max_new_tokens": 48,
        "rollout.vllm": {"venv": str(vllm_venv), "dtype": "float32", "max_num_seqs": 16, "kv_cache_gib": 1},
        "eval.engine": "rollout", "eval.samples": 1, "eval.temperature": 0.0, "eval.max_new_tokens": 48,
        "audit.rows": 4, "checkpoint.every": 2,
    })
    engines: list[tuple[str, str]] = []
    original = BatchSource.eval_engine

    def recording(self: BatchSource) -> TokenEngine:
        engine = original(self)
        engines.append((type(engine).__name__, engine.policy_version))
        return engine

    monkeypatch.setattr(BatchSource, "eval_engine", recording)
    results = Trainer(config, tmp_path / "run", progress=False).run()

    assert results.engine == "vllm" and results.steps == 2
    assert results.audit["checked_tokens"] > 0 and results.audit["offending_tokens"] == 0
    # Evaluated on the server, before the first update (version 0) and after the last (version 2).
    assert engines and {name for name, _ in engines} == {"OpenAICompatibleEngine"}
    assert engines[0][1].endswith("0") and engines[-1][1].endswith("2")
    # The adapter the server last loaded is the trained one: LoRA's B starts at zero and moved.
    adapter = tmp_path / "run" / "final_model" / "adapters" / "policy" / "adapter_model.safetensors"
    tensors = load_file(adapter)
    assert any(name.endswith("lora_B.weight") and t.abs().sum() > 0 for name, t in tensors.items())
