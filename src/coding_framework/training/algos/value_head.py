"""The PPO critic's head: a scalar value from a hidden state of the policy's trunk.

``PolicyUpdate`` puts it on the policy's (detached) hidden states, so one trunk forward serves the policy
and the critic and value gradients never move the policy. Values follow verl's convention: the value of
response token t comes from the state that predicts it (``batch.score``'s ``hidden``).
"""

from __future__ import annotations

import torch

__all__ = ["ValueHead"]


class ValueHead(torch.nn.Module):
    """Linear map from a hidden state to a scalar value, zero-initialised so initial values are 0."""

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.proj = torch.nn.Linear(hidden_size, 1)
        torch.nn.init.zeros_(self.proj.weight)
        torch.nn.init.zeros_(self.proj.bias)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.proj(hidden.float()).squeeze(-1)  # (B, T, H) -> (B, T)
