"""One real GRPO step through verl's own trainer on CPU (``verl-train`` with ``device: cpu``): the FSDP2
worker on gloo, our agent loop, the token-server rollout fed the new weights, then the final model, the
gate and the registry. verl's own CPU tests never run a training step."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from coding_framework.testing.tiny_run import tiny_config

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]


def test_one_verl_step_on_cpu_changes_the_weights_and_the_audit_finds_nothing(tmp_path: Path) -> None:
    config = tiny_config(tmp_path, device="cpu", steps=1, checkpoint={"every": 1, "keep_last": 1},
                         eval={"max_new_tokens": 12, "baseline": False})
    data = yaml.safe_load(config.read_text())
    assert data["algo"]["entropy_coef"] > 0  # noise answers earn 0: the entropy bonus moves the weights
    run = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "coding_framework.cli", "verl-train", "--config", str(config), "--run-dir",
         str(run)], capture_output=True, text=True, timeout=900, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["steps"] == 1 and result["weights_changed"] is True
    assert result["audit_offending_tokens"] == 0 and result["audit_checked_tokens"] > 0
    assert result["trainer_rollout_logprob_diff_max"] < 1e-3  # verl's FSDP recompute vs the rollout's
    assert result["challenger"] is result["gate"]["passed"]
    final = Path(result["final_model"])
    assert final == run / "final_model" and (final / "config.json").is_file()
    assert (run / "checkpoints" / "global_step_1" / "actor").is_dir()
    assert json.loads((run / "results.json").read_text())["steps"] == 1
