"""Per-role LoRA adapters in a whole run: each role's rows move only its adapter, the base stays frozen, the
audit finds 0 drift per role through each role's adapter, and checkpoints resume the adapters exactly."""

from __future__ import annotations

import hashlib
import shutil

import mlflow
import pytest
import torch
from safetensors.torch import load_file

from coding_framework.config import load_config
from coding_framework.config.training import TrainingConfig
from coding_framework.models import ADAPTER_FILE
from coding_framework.testing.tiny_run import comparable, tiny_config
from coding_framework.training import Trainer

ROLES = ("generator", "reviewer")
PER_ROLE = {
    "steps": 2,
    "workflow": {
        "graph": {"max_rounds": 2, "review": "on_failure"},
        "agents": {"reviewer": {"backend": "llm", "sampling": {"max_new_tokens": 8}}},
    },
    "rollout": {"problems_per_step": 2, "group_size": 2, "max_new_tokens": 12,
                "trained_roles": ["generator", "reviewer"]},
    "policies": {"mode": "per_role_lora", "rank": 4, "alpha": 8},
    "checkpoint": {"every": 1, "keep_last": 3},
    "eval": {"max_new_tokens": 12, "baseline": False},
    "audit": {"rows": 8},
}


def _adapters(directory) -> dict[str, dict[str, torch.Tensor]]:
    return {name: load_file(str(directory / "adapters" / name / ADAPTER_FILE)) for name in ROLES}


@pytest.mark.slow
def test_per_role_adapters_train_resume_and_audit(tmp_path) -> None:
    config = load_config(TrainingConfig, tiny_config(tmp_path, **PER_ROLE))
    straight = Trainer(config, tmp_path / "straight", progress=False)
    base_before = {k: v.clone() for k, v in straight.model.state_dict().items() if "lora_" not in k}
    results = straight.run()

    step = results.history[0].metrics
    assert step["generator/rows_used"] > 0 and step["reviewer/rows_used"] > 0
    assert step["audit/generator/offending_tokens"] == 0 and step["audit/reviewer/offending_tokens"] == 0
    assert results.audit["offending_tokens"] == 0
    after = straight.model.state_dict()
    assert all(torch.equal(after[k], v) for k, v in base_before.items())  # LoRA never moves the base

    final = _adapters(results.final_model_dir)
    # The registered version is the base plus one attested adapter per role.
    registered = results.registered_model
    uri = f"sqlite:///{(tmp_path / 'straight' / 'mlflow.db').resolve()}"
    client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)
    version = client.get_model_version(registered["registered_model"], str(registered["registered_version"]))
    tags = version.tags
    for name in ROLES:
        digest = hashlib.sha256((results.final_model_dir / "adapters" / name / ADAPTER_FILE).read_bytes())
        assert tags[f"adapter_sha256.{name}"] == digest.hexdigest()
    fresh = Trainer(config, tmp_path / "fresh", progress=False)
    try:
        for name, tensors in final.items():  # both adapters moved away from their initial state
            initial = fresh.policies.adapters.state_dict(name)
            assert any(not torch.equal(initial[k], v) for k, v in tensors.items()), name
    finally:
        fresh.close()

    # Resume from the step-1 checkpoint: the adapters, their optimizers and the RNG continue exactly.
    ckpts = tmp_path / "straight" / "checkpoints"
    assert (ckpts / "step-000001" / "model" / "adapters" / "reviewer" / ADAPTER_FILE).is_file()
    resumed_dir = tmp_path / "resumed"
    resumed_dir.mkdir()
    (resumed_dir / "config.json").write_text((tmp_path / "straight" / "config.json").read_text())
    (resumed_dir / "checkpoints").mkdir()
    shutil.copytree(ckpts / "step-000001", resumed_dir / "checkpoints" / "step-000001")
    resumed = Trainer(config, resumed_dir, resume=True, progress=False).run()
    assert comparable([r.model_dump() for r in resumed.history]) == comparable(
        [r.model_dump() for r in results.history]
    )
    for name, tensors in _adapters(resumed.final_model_dir).items():
        assert all(torch.equal(final[name][k], v) for k, v in tensors.items())
