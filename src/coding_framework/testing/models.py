"""A tiny randomly initialised Qwen2 saved as a model directory: a real `local:` backend, nothing to fetch.

Its answers are noise, so tests using it check the plumbing (CLI output, server runs), not solutions.
"""

from __future__ import annotations

from pathlib import Path

from coding_framework.config.embedded import ArchitectureConfig
from coding_framework.embedded.architecture import init_model
from coding_framework.testing.engine import tiny_tokenizer

TINY = ArchitectureConfig(
    hidden_size=64, num_layers=1, num_heads=2, num_kv_heads=2, intermediate_size=64, max_positions=4096
)


def tiny_model_dir(path: Path) -> Path:
    tokenizer = tiny_tokenizer()
    init_model(TINY, tokenizer, seed=0).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
