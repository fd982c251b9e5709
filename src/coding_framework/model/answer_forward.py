"""A Qwen2 forward pass for SFT that computes only what the answer loss needs.

Every row of an SFT batch starts with the same tokens (the chat template and system prompt, about a
fifth of a row): their keys and values are computed once and shared. Every layer but the last must run
on all later positions (they attend to each other), but the last layer's queries, attention output, MLP
and the final norm only matter at the positions that predict an answer token, a fifth of each row.
Skipping the rest is the same function, and it cuts the embedded model's SFT step by about a third
(1.07 -> 0.71 s for 16 rows on 2 cores).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from transformers.models.qwen2.modeling_qwen2 import Qwen2DecoderLayer, Qwen2ForCausalLM, rotate_half


def answer_hidden(
    model: Qwen2ForCausalLM, ids: torch.Tensor, attn: torch.Tensor, predicts: torch.Tensor
) -> torch.Tensor:
    """Final-norm hidden states (N, H) of the positions where ``predicts`` (B, T) is true, row-major.

    Equal to ``model.model(ids, attention_mask=attn).last_hidden_state[predicts]`` up to float rounding.
    """
    inner = model.model
    *body, last = inner.layers
    shared = _shared_prefix(ids, attn, predicts)
    positions = torch.arange(ids.shape[1])
    cos, sin = inner.rotary_emb(inner.embed_tokens.weight, positions.unsqueeze(0))  # (1, T, D)

    past: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * len(inner.layers)
    if shared:
        h = inner.embed_tokens(ids[:1, :shared])  # (1, S, H)
        causal = (positions[:shared] <= positions[:shared, None]).view(1, 1, shared, shared)
        for i, layer in enumerate(inner.layers):
            h, past[i] = _layer(layer, h, cos[:, :shared], sin[:, :shared], causal)

    h = inner.embed_tokens(ids[:, shared:])  # (B, T - S, H)
    seen = attn.bool().unsqueeze(1)  # (B, 1, T)
    allowed = (positions <= positions[shared:, None]) & seen  # (B, T - S, T)
    for layer, kv in zip(body, past[:-1], strict=True):
        h, _ = _layer(layer, h, cos[:, shared:], sin[:, shared:], allowed.unsqueeze(1), kv)

    queries, valid = _query_window(predicts[:, shared:])  # (B, Q) suffix positions, (B, Q) real ones
    rows = torch.arange(ids.shape[0]).unsqueeze(1)
    at = queries + shared
    allowed = (positions <= at.unsqueeze(-1)) & seen  # (B, Q, T)
    out, _ = _layer(
        last, h, cos[:, shared:], sin[:, shared:], allowed.unsqueeze(1), past[-1], (rows, queries), valid
    )
    return inner.norm(out)


def _layer(
    layer: Qwen2DecoderLayer,
    h: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    allowed: torch.Tensor,
    past: tuple[torch.Tensor, torch.Tensor] | None = None,
    index: tuple[torch.Tensor, torch.Tensor] | None = None,
    valid: torch.Tensor | None = None,
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    """One decoder layer on ``h`` (B, T, H) after ``past`` keys and values (1, KV, S, D).

    Returns the new hidden states and this layer's keys and values of ``h``. With ``index`` (rows,
    positions), only those positions are queries; with ``valid`` the result is flattened to them (N, H).
    """
    sa = layer.self_attn
    x = layer.input_layernorm(h)
    k = _rotate(_heads(sa.k_proj(x), sa.head_dim), cos, sin)
    v = _heads(sa.v_proj(x), sa.head_dim)
    new = (k, v)
    if past is not None:
        k = torch.cat([past[0].expand(h.shape[0], -1, -1, -1), k], dim=2)
        v = torch.cat([past[1].expand(h.shape[0], -1, -1, -1), v], dim=2)
    if index is not None:
        x, h = x[index], h[index]
        cos, sin = cos[0][index[1]], sin[0][index[1]]
    q = _rotate(_heads(sa.q_proj(x), sa.head_dim), cos, sin)
    out = (
        F.scaled_dot_product_attention(
            q, k, v, attn_mask=allowed, scale=sa.scaling, enable_gqa=k.shape[1] != q.shape[1]
        )
        .transpose(1, 2)
        .flatten(2)
    )
    if valid is not None:
        out, h = out[valid], h[valid]
    h = h + sa.o_proj(out)
    h = h + layer.mlp(layer.post_attention_layernorm(h))
    return h, new


def _heads(x: torch.Tensor, head_dim: int) -> torch.Tensor:
    """(B, T, heads * D) -> (B, heads, T, D)."""
    return x.view(*x.shape[:2], -1, head_dim).transpose(1, 2)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding of (B, heads, T, D) by (1 or B, T, D) angles."""
    return x * cos.unsqueeze(1) + rotate_half(x) * sin.unsqueeze(1)


def _shared_prefix(ids: torch.Tensor, attn: torch.Tensor, predicts: torch.Tensor) -> int:
    """How many leading tokens every row has in common, none of them predicting and not the last."""
    same = ((ids == ids[:1]) & attn.bool()).all(dim=0) & ~predicts.any(dim=0)
    return min(int(same.int().cumprod(0).sum()), ids.shape[1] - 1)


def _query_window(predicts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row, the span from its first to its last true position, left-aligned and padded to one width."""
    width = predicts.shape[1]
    any_true = predicts.any(dim=1)
    first = torch.where(any_true, predicts.int().argmax(dim=1), 0)
    last = torch.where(any_true, width - 1 - predicts.flip(1).int().argmax(dim=1), -1)
    span = int((last - first + 1).clamp(min=0).max())
    offsets = torch.arange(max(span, 1))
    queries = (first.unsqueeze(1) + offsets).clamp(max=width - 1)  # (B, Q)
    valid = (offsets <= (last - first).unsqueeze(1)) & predicts.gather(1, queries)
    return queries, valid
