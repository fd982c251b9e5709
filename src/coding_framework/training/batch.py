"""Trajectories as padded tensors, and the teacher-forced forward pass that scores them (fp32).

Episodes of one GRPO group share their prompt token for token, and prompts are most of the tokens
(a synthetic task's prompt is ~170 tokens, a draft ~50). So ``score`` runs each distinct prompt once,
keeps its KV cache (with grad), repeats it for every response that follows it and runs the responses
on top: the same logprobs and gradients as a full forward of each ``prompt + response`` row (up to
fp32 rounding), for a fraction of the compute. Only positions with ``response_mask == 1`` go through
the LM head; in multi-turn rows the feedback tokens are context only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:  # torch alone at run time: benchmarks/gpu_precision.py loads this file by itself
    from transformers import PreTrainedModel

    from coding_framework.training.trajectory import Trajectory


@dataclass
class TrajectoryBatch:
    """B rows over U distinct prompts; responses right-padded to R positions."""

    prompts: list[torch.Tensor]  # U tensors (P_u,) long
    prompt_index: torch.Tensor  # (B,) long: the prompt each row continues
    response_ids: torch.Tensor  # (B, R) long
    response_len: torch.Tensor  # (B,) long: real (unpadded) response length
    response_mask: torch.Tensor  # (B, R) float {0, 1}: 1 on tokens the trained role generated
    old_logprobs: torch.Tensor  # (B, R) float32, recorded at sampling time
    rewards: torch.Tensor  # (B,) float32
    group_ids: list[str]

    def __len__(self) -> int:
        return self.response_ids.shape[0]

    @classmethod
    def from_trajectories(cls, rows: Sequence[Trajectory], pad_id: int) -> TrajectoryBatch:
        if not rows:
            raise ValueError("cannot build a batch from no trajectories")
        unique: dict[tuple[int, ...], int] = {}
        for t in rows:
            unique.setdefault(tuple(t.prompt_ids), len(unique))
        b, resp = len(rows), max(len(t.response_ids) for t in rows)
        resp_ids = torch.full((b, resp), pad_id, dtype=torch.long)
        mask = torch.zeros((b, resp), dtype=torch.float32)
        old = torch.zeros((b, resp), dtype=torch.float32)
        for i, t in enumerate(rows):
            r = len(t.response_ids)
            resp_ids[i, :r] = torch.tensor(t.response_ids)
            mask[i, :r] = torch.tensor(t.response_mask, dtype=torch.float32)
            old[i, :r] = torch.tensor(t.response_logprobs, dtype=torch.float32)
        return cls(
            prompts=[torch.tensor(p, dtype=torch.long) for p in unique],
            prompt_index=torch.tensor([unique[tuple(t.prompt_ids)] for t in rows]),
            response_ids=resp_ids,
            response_len=torch.tensor([len(t.response_ids) for t in rows]),
            response_mask=mask,
            old_logprobs=old,
            rewards=torch.tensor([t.reward for t in rows], dtype=torch.float32),
            group_ids=[t.group_id for t in rows],
        )

    def select(self, rows: Sequence[int]) -> TrajectoryBatch:
        """The given rows, responses trimmed to their own longest."""
        idx = torch.tensor(list(rows), dtype=torch.long)
        width = max(1, int(self.response_len[idx].max()))
        return TrajectoryBatch(
            prompts=self.prompts,
            prompt_index=self.prompt_index[idx],
            response_ids=self.response_ids[idx, :width],
            response_len=self.response_len[idx],
            response_mask=self.response_mask[idx, :width],
            old_logprobs=self.old_logprobs[idx, :width],
            rewards=self.rewards[idx],
            group_ids=[self.group_ids[i] for i in rows],
        )


@dataclass
class Scored:
    """The policy's view of a batch: (B, R) tensors, zero where ``response_mask`` is 0."""

    logprobs: torch.Tensor
    entropy: torch.Tensor | None
    hidden: torch.Tensor  # (B, R, H): the state that predicts each response token (for a value head)


def _predicting_states(decoder: torch.nn.Module, batch: TrajectoryBatch) -> torch.Tensor:
    """(B, R, H): for each response token, the last hidden state of everything before it."""
    parts, order = [], []
    width = batch.response_ids.shape[1]
    for u in batch.prompt_index.unique().tolist():
        rows = (batch.prompt_index == u).nonzero().squeeze(-1)  # (n,)
        n, prompt = len(rows), batch.prompts[u].unsqueeze(0)  # (1, P)
        out = decoder(input_ids=prompt, use_cache=True)
        cache = out.past_key_values
        if n > 1:
            cache.batch_repeat_interleave(n)
        p = prompt.shape[1]
        w = int(batch.response_len[rows].max())  # this group's own width: one-round rows are short
        dev = prompt.device
        real = torch.arange(w, device=dev) < batch.response_len[rows].unsqueeze(-1)  # (n, w)
        attn = torch.cat([torch.ones(n, p, dtype=torch.long, device=dev), real.long()], dim=1)  # (n, P + w)
        positions = (p + torch.arange(w, device=dev)).expand(n, w)  # (n, w)
        h = decoder(
            input_ids=batch.response_ids[rows, :w],
            attention_mask=attn,
            position_ids=positions,
            past_key_values=cache,
            use_cache=True,
        ).last_hidden_state  # (n, w, H)
        last_prompt = out.last_hidden_state[:, -1:].expand(n, 1, -1)  # (n, 1, H)
        states = torch.cat([last_prompt, h[:, : w - 1]], dim=1)  # (n, w, H): state t predicts token t
        parts.append(torch.nn.functional.pad(states, (0, 0, 0, width - w)))  # (n, R, H)
        order.append(rows)
    states = torch.cat(parts)  # (B, R, H) in group order
    return states[torch.argsort(torch.cat(order))]


def _predicting_states_full(decoder: torch.nn.Module, batch: TrajectoryBatch) -> torch.Tensor:
    """``_predicting_states`` without the shared prompt cache: one forward of ``prompt + response`` per
    row, which gradient checkpointing needs (it recomputes layers, and a cache cannot carry across)."""
    parts, order = [], []
    width = batch.response_ids.shape[1]
    for u in batch.prompt_index.unique().tolist():
        rows = (batch.prompt_index == u).nonzero().squeeze(-1)
        prompt = batch.prompts[u]
        n, p, w = len(rows), prompt.shape[0], int(batch.response_len[rows].max())
        ids = torch.cat([prompt.expand(n, p), batch.response_ids[rows, :w]], dim=1)  # (n, P + w)
        real = torch.arange(w, device=ids.device) < batch.response_len[rows].unsqueeze(-1)
        attn = torch.cat([torch.ones(n, p, dtype=torch.long, device=ids.device), real.long()], dim=1)
        h = decoder(input_ids=ids, attention_mask=attn, use_cache=False).last_hidden_state
        parts.append(torch.nn.functional.pad(h[:, p - 1 : p + w - 1], (0, 0, 0, width - w)))  # (n, R, H)
        order.append(rows)
    return torch.cat(parts)[torch.argsort(torch.cat(order))]


def score(model: PreTrainedModel, batch: TrajectoryBatch, entropy: bool = False,
          checkpointed: bool = False) -> Scored:
    """Teacher-forced fp32 ``log p(response_ids[t] | prompt, response_ids[:t])`` (with grad if enabled).
    ``checkpointed``: full rows, for a model with gradient checkpointing on."""
    decoder = model.get_decoder()
    h = _predicting_states_full(decoder, batch) if checkpointed else _predicting_states(decoder, batch)
    sel = batch.response_mask.bool()  # (B, R)
    logits = model.get_output_embeddings()(h[sel]).float()  # (N, V)
    logp_all = torch.log_softmax(logits, dim=-1)  # (N, V)
    picked = logp_all.gather(-1, batch.response_ids[sel].unsqueeze(-1)).squeeze(-1)  # (N,)
    logprobs = torch.zeros(sel.shape, dtype=torch.float32, device=sel.device).masked_scatter(sel, picked)
    ent = None
    if entropy:
        per_token = -(logp_all.exp() * logp_all).sum(-1)  # (N,)
        ent = torch.zeros(sel.shape, dtype=torch.float32, device=sel.device).masked_scatter(sel, per_token)
    return Scored(logprobs=logprobs, entropy=ent, hidden=h)


def last_token_rewards(batch: TrajectoryBatch, rewards: torch.Tensor) -> torch.Tensor:
    """(B, R) token rewards: each row's scalar reward on its last generated token, zero elsewhere."""
    mask = batch.response_mask
    steps = torch.arange(mask.shape[1], dtype=mask.dtype, device=mask.device)
    last = (mask * steps).argmax(-1)  # (B,)
    out = torch.zeros_like(mask)
    out[torch.arange(len(batch), device=mask.device), last] = rewards
    return out
