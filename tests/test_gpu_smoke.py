"""The GPU smoke script (scripts/gpu_smoke.sh): verl-train 2 steps -> verl-export -> vLLM loads the export.
Runs only where CUDA and vLLM exist (the GPU environment of docs/scale_out.md); skipped elsewhere."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu_smoke.sh"

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="needs vLLM (the GPU environment)"),
]


def test_two_verl_steps_export_and_load_in_vllm(tmp_path: Path) -> None:
    done = subprocess.run(["bash", str(SCRIPT), "", str(tmp_path / "run")], capture_output=True, text=True,
                          timeout=3600, env={**os.environ, "PYTHON": sys.executable})
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["vllm_tokens"] > 0 and (tmp_path / "run" / "hf" / "config.json").is_file()
