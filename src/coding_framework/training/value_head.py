"""The PPO critic: a scalar value head on a transformer trunk's last hidden states.

The trunk is either a separate copy of the policy (verl's default: its own weights and optimizer) or
the policy itself (``share_backbone=True``: one trunk, value gradients flow into the policy, cheaper).
Values follow verl's convention: the value of response token t is predicted from the state *before* it,
``values[:, -R - 1 : -1]`` (see ``response_values``).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM, PreTrainedModel

HEAD_FILE = "value_head.safetensors"
META_FILE = "critic.json"
BACKBONE_DIR = "backbone"


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


class Critic(torch.nn.Module):
    """V(s_t) for every position of a (B, T) batch: trunk hidden states -> ``ValueHead``."""

    def __init__(self, backbone: PreTrainedModel, head: ValueHead | None = None, *,
                 shared: bool = False) -> None:
        super().__init__()
        self.backbone = backbone
        hidden = backbone.config.hidden_size
        self.head = head or ValueHead(hidden)
        if self.head.hidden_size != hidden:
            raise ValueError(f"value head expects hidden size {self.head.hidden_size}, "
                             f"the trunk has {hidden}")
        self.shared = shared

    @classmethod
    def from_policy(cls, policy: PreTrainedModel, *, share_backbone: bool = False) -> Critic:
        """A critic on the policy's trunk (shared) or on a copy of it (separate, as verl's critic worker)."""
        return cls(policy if share_backbone else copy.deepcopy(policy), shared=share_backbone)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                position_ids: torch.Tensor | None = None) -> torch.Tensor:
        """(B, T) values; the trunk's base model runs without its LM head."""
        out = self.backbone.base_model(input_ids=input_ids, attention_mask=attention_mask,
                                       position_ids=position_ids)
        return self.head(out.last_hidden_state)  # (B, T)

    def response_values(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                        position_ids: torch.Tensor, response_length: int) -> torch.Tensor:
        """(B, R) values for a verl-layout batch (responses are the last R columns), zero past the mask."""
        values = self(input_ids, attention_mask, position_ids)[:, -response_length - 1 : -1]  # (B, R)
        return values * attention_mask[:, -response_length:]

    def save(self, path: str | Path) -> Path:
        """Write the head (and, unless shared, the trunk) to ``path``."""
        out = Path(path)
        out.mkdir(parents=True, exist_ok=True)
        save_file({k: v.detach().contiguous() for k, v in self.head.state_dict().items()}, out / HEAD_FILE)
        if not self.shared:
            self.backbone.save_pretrained(out / BACKBONE_DIR)
        meta = {"hidden_size": self.head.hidden_size, "shared": self.shared}
        (out / META_FILE).write_text(json.dumps(meta, indent=2) + "\n")
        return out

    @classmethod
    def load(cls, path: str | Path, policy: PreTrainedModel | None = None) -> Critic:
        """Load a saved critic; a shared one needs the ``policy`` whose trunk it sits on."""
        src = Path(path)
        if not (src / META_FILE).is_file():
            raise FileNotFoundError(f"{src} holds no critic ({META_FILE} missing)")
        meta = json.loads((src / META_FILE).read_text())
        if meta["shared"]:
            if policy is None:
                raise ValueError(f"the critic in {src} shares the policy's trunk: pass the policy to load it")
            backbone = policy
        else:
            backbone = AutoModelForCausalLM.from_pretrained(src / BACKBONE_DIR)
        head = ValueHead(meta["hidden_size"])
        state = load_file(src / HEAD_FILE)
        expected = {k: v.shape for k, v in head.state_dict().items()}
        got = {k: v.shape for k, v in state.items()}
        if got != expected:
            raise ValueError(f"value head tensors {got} do not match the expected shapes {expected}")
        head.load_state_dict(state)
        return cls(backbone, head, shared=meta["shared"])
