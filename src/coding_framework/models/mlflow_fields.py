"""How values are written to MLflow, by the trainer and by serving's rollout runs alike."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["flatten", "metric_key"]

_BAD_CHARS = re.compile(r"[^\w./\- :]")


def metric_key(name: str) -> str:
    """MLflow takes letters, digits, ``_ - . / :`` and spaces: ``heldout_pass@1`` -> ``heldout_pass_at_1``."""
    return _BAD_CHARS.sub("_", name.replace("@", "_at_"))


def flatten(params: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested config as ``a.b.c -> str(value)`` (MLflow params are flat strings of at most 6000 chars)."""
    out: dict[str, str] = {}
    for key, value in params.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = json.dumps(value, default=str)[:6000] if not isinstance(value, str) else value[:6000]
    return out
