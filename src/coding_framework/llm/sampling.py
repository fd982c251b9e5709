"""Pure tensor functions for one decoding step: temperature, nucleus (top-p) filtering, seeded draws."""

from __future__ import annotations

import torch

_GOLDEN = 0x9E3779B97F4A7C15
_MASK63 = (1 << 63) - 1


def row_seed(seed: int, index: int) -> int:
    """Seed of row ``index`` of a batch sampled with ``seed``; row 0 gets ``seed`` itself.

    So ``generate(p, seed=s)`` draws the same random numbers as row 0 of ``generate_batch([p, ...], seed=s)``,
    while the other rows of a batch draw independent streams.
    """
    return (seed + index * _GOLDEN) & _MASK63


def top_p_filter(probs: torch.Tensor, top_p: torch.Tensor) -> torch.Tensor:
    """Zero the tail of each row outside its nucleus and renormalise.

    probs: (B, V) rows summing to 1; top_p: (B,) in (0, 1]. Keeps the smallest set of most likely tokens
    whose mass reaches ``top_p`` (always at least the most likely one).
    """
    sorted_probs, order = probs.sort(dim=-1, descending=True)  # (B, V)
    mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs  # (B, V) mass of strictly likelier tokens
    drop_sorted = mass_before >= top_p.unsqueeze(-1)  # (B, V)
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
    kept = probs.masked_fill(drop, 0.0)
    return kept / kept.sum(dim=-1, keepdim=True)


def sample_next(
    logits: torch.Tensor, temperature: torch.Tensor, top_p: torch.Tensor, generators: list[torch.Generator]
) -> torch.Tensor:
    """The next token of each row. Rows with temperature 0 are greedy.

    logits: (B, V) fp32 model logits; temperature, top_p: (B,); one generator per row. Returns (B,) ids.
    """
    greedy = logits.argmax(dim=-1)  # (B,)
    sampled_rows = (temperature > 0).nonzero(as_tuple=True)[0].tolist()
    if not sampled_rows:
        return greedy
    idx = torch.tensor(sampled_rows, device=logits.device)
    scaled = logits[idx] / temperature[idx].unsqueeze(-1)  # (S, V)
    probs = torch.softmax(scaled, dim=-1)  # (S, V)
    if bool((top_p[idx] < 1).any()):  # the nucleus sort is the costliest part of a step; skip it when unused
        probs = top_p_filter(probs, top_p[idx])
    out = greedy.clone()
    for j, row in enumerate(sampled_rows):
        out[row] = torch.multinomial(probs[j], 1, generator=generators[row])[0]
    return out
