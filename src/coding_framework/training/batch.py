"""Trajectories as padded tensors, and the teacher-forced forward pass that scores them (fp32).

Each row is ``prompt_ids + response_ids`` right-padded to the batch width. ``positions[i, t]`` is where
response token ``t`` of row ``i`` sits in that row, so the hidden state that predicts it is at
``positions - 1``. Only positions with ``response_mask == 1`` go through the LM head: in multi-turn rows
most tokens are prompt or feedback, and the head over the vocabulary is the costly part.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from coding_framework.training.trajectory import Trajectory


@dataclass
class TrajectoryBatch:
    """B rows, T sequence positions, R response positions (all padded)."""

    input_ids: torch.Tensor  # (B, T) long
    attention_mask: torch.Tensor  # (B, T) long
    positions: torch.Tensor  # (B, R) long: index of each response token in its row
    response_ids: torch.Tensor  # (B, R) long
    response_mask: torch.Tensor  # (B, R) float {0, 1}
    old_logprobs: torch.Tensor  # (B, R) float32, recorded at sampling time
    rewards: torch.Tensor  # (B,) float32
    group_ids: list[str]

    def __len__(self) -> int:
        return self.input_ids.shape[0]

    @classmethod
    def from_trajectories(cls, rows: Sequence[Trajectory], pad_id: int) -> TrajectoryBatch:
        if not rows:
            raise ValueError("cannot build a batch from no trajectories")
        width = max(len(t.prompt_ids) + len(t.response_ids) for t in rows)
        resp = max(len(t.response_ids) for t in rows)
        b = len(rows)
        ids = torch.full((b, width), pad_id, dtype=torch.long)
        attn = torch.zeros((b, width), dtype=torch.long)
        pos = torch.zeros((b, resp), dtype=torch.long)
        resp_ids = torch.full((b, resp), pad_id, dtype=torch.long)
        mask = torch.zeros((b, resp), dtype=torch.float32)
        old = torch.zeros((b, resp), dtype=torch.float32)
        for i, t in enumerate(rows):
            p, r = len(t.prompt_ids), len(t.response_ids)
            ids[i, : p + r] = torch.tensor(t.ids)
            attn[i, : p + r] = 1
            pos[i] = torch.arange(p, p + resp).clamp(max=width - 1)
            resp_ids[i, :r] = torch.tensor(t.response_ids)
            mask[i, :r] = torch.tensor(t.response_mask, dtype=torch.float32)
            old[i, :r] = torch.tensor(t.response_logprobs, dtype=torch.float32)
        rewards = torch.tensor([t.reward for t in rows], dtype=torch.float32)
        return cls(ids, attn, pos, resp_ids, mask, old, rewards, [t.group_id for t in rows])

    def select(self, rows: Sequence[int]) -> TrajectoryBatch:
        """The given rows, trimmed to their own widths."""
        idx = torch.tensor(list(rows), dtype=torch.long)
        attn = self.attention_mask[idx]
        width = int(attn.sum(-1).max())
        mask = self.response_mask[idx]
        used = mask.sum(0).nonzero()
        resp = int(used.max()) + 1 if len(used) else 1
        return TrajectoryBatch(
            input_ids=self.input_ids[idx, :width],
            attention_mask=attn[:, :width],
            positions=self.positions[idx, :resp].clamp(max=width - 1),
            response_ids=self.response_ids[idx, :resp],
            response_mask=mask[:, :resp],
            old_logprobs=self.old_logprobs[idx, :resp],
            rewards=self.rewards[idx],
            group_ids=[self.group_ids[i] for i in rows],
        )


@dataclass
class Scored:
    """The policy's view of a batch: (B, R) tensors, zero where ``response_mask`` is 0."""

    logprobs: torch.Tensor
    entropy: torch.Tensor | None
    hidden: torch.Tensor  # (B, R, H): the state that predicts each response token (for a value head)


def score(model: torch.nn.Module, batch: TrajectoryBatch, entropy: bool = False) -> Scored:
    """Teacher-forced fp32 ``log p(response_ids[t] | everything before it)`` (with grad if enabled)."""
    decoder, head = model.get_decoder(), model.get_output_embeddings()
    hidden = decoder(
        input_ids=batch.input_ids, attention_mask=batch.attention_mask
    ).last_hidden_state  # (B, T, H)
    at = (batch.positions - 1).clamp(min=0)  # (B, R)
    h = hidden.gather(1, at.unsqueeze(-1).expand(-1, -1, hidden.shape[-1]))  # (B, R, H)
    sel = batch.response_mask.bool()  # (B, R)
    logits = head(h[sel]).float()  # (N, V)
    logp_all = torch.log_softmax(logits, dim=-1)  # (N, V)
    picked = logp_all.gather(-1, batch.response_ids[sel].unsqueeze(-1)).squeeze(-1)  # (N,)
    logprobs = torch.zeros(sel.shape, dtype=torch.float32).masked_scatter(sel, picked)  # (B, R)
    ent = None
    if entropy:
        per_token = -(logp_all.exp() * logp_all).sum(-1)  # (N,)
        ent = torch.zeros(sel.shape, dtype=torch.float32).masked_scatter(sel, per_token)
    return Scored(logprobs=logprobs, entropy=ent, hidden=h)


def last_token_rewards(batch: TrajectoryBatch, rewards: torch.Tensor) -> torch.Tensor:
    """(B, R) token rewards: each row's scalar reward on its last generated token, zero elsewhere."""
    mask = batch.response_mask
    last = (mask * torch.arange(mask.shape[1], dtype=mask.dtype)).argmax(-1)  # (B,)
    out = torch.zeros_like(mask)
    out[torch.arange(len(batch)), last] = rewards
    return out
