"""What a rollout engine does: hold a policy version's weights and hand out a token engine that samples
with them."""

from __future__ import annotations

from typing import Protocol

import torch

from coding_framework.llm.base import TokenEngine

__all__ = ["PolicySnapshot", "RolloutEngine"]

PolicySnapshot = dict[str, dict[str, torch.Tensor]]
"""The trained weights of one policy version: per adapter name (``""``: the whole model), CPU copies."""


class RolloutEngine(Protocol):
    """``publish`` makes a version's weights available (the seconds it took are the sync time);
    ``engine_for`` is a token engine sampling with a published version's weights. Versions are published
    in increasing order; ``retire`` says no batch will ask for versions below ``oldest`` again."""

    def publish(self, version: int, snapshot: PolicySnapshot) -> float: ...

    def engine_for(self, version: int) -> TokenEngine: ...

    def retire(self, oldest: int) -> None: ...

    def close(self) -> None: ...
