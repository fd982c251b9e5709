"""A whole training run small enough for tests: a tiny random Qwen2, two families, a few short steps.

The model's answers are noise, so correctness rewards are all 0; the entropy bonus and the KL loss still
move the weights every step, which is what resume and tracking tests need to tell runs apart.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from coding_framework.testing.models import tiny_model_dir

TIMING = ("seconds/", "charts/tokens_per_s", "charts/samples_per_s", "async/idle_s", "async/generator_idle_s",
          "memory/")

TINY_RUN: dict[str, Any] = {
    "algorithm": "grpo",
    "seed": 1,
    "steps": 5,
    "threads": 1,
    "data": {"synthetic_per_family": 4, "families": ["add_constant", "repeat_string"], "heldout_limit": 2},
    "rollout": {"problems_per_step": 2, "group_size": 2, "max_new_tokens": 12},
    "workflow": {"graph": {"max_rounds": 2, "review": "never"}},
    "reward": {"function": {"weights": {"correctness": 1.0, "style": 0.0, "efficiency": 0.0}}},
    "algo": {"entropy_coef": 0.05},
    "kl": {"mode": "loss", "coef": 0.01},
    "optim": {"lr": 0.01, "micro_batch_size": 4},
    "checkpoint": {"every": 2, "keep_last": 3},
    "eval": {"max_new_tokens": 12},
    "audit": {"rows": 2},
}


def tiny_config(tmp: Path, **overrides: Any) -> Path:
    """Write the tiny run's YAML (with a tiny model directory) under ``tmp``; ``overrides`` replace keys."""
    model = tmp / "tiny-model"
    if not (model / "config.json").is_file():
        tiny_model_dir(model)
    data = copy.deepcopy(TINY_RUN) | {"model": str(model)} | overrides
    path = tmp / "tiny.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def comparable(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per-step metrics without wall-clock timings (which no two runs share)."""
    return [{"step": r["step"], **{k: v for k, v in r["metrics"].items() if not k.startswith(TIMING)}}
            for r in history]
