"""Supervised fine-tuning of the embedded model: masked next-token loss on answer tokens, AdamW, cosine LR."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from coding_framework.config.model import SFTSettings
from coding_framework.model.data import SFTExample

StepCallback = Callable[[int, float], None]


@dataclass(frozen=True)
class SFTStats:
    steps: int
    examples: int
    answer_tokens: int
    first_loss: float
    final_loss: float


def _batches(
    examples: Sequence[SFTExample], batch_size: int, rng: random.Random
) -> Iterator[list[SFTExample]]:
    """Endless length-grouped batches: shuffle, sort windows of 16 batches by length, shuffle the batches."""
    window = batch_size * 16
    while True:
        order = list(examples)
        rng.shuffle(order)
        batches = []
        for i in range(0, len(order), window):
            chunk = sorted(order[i : i + window], key=lambda e: len(e.input_ids))
            batches.extend(chunk[j : j + batch_size] for j in range(0, len(chunk), batch_size))
        rng.shuffle(batches)
        yield from batches


def collate(batch: Sequence[SFTExample], pad_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded ids (B, T), attention mask (B, T) and loss mask (B, T)."""
    width = max(len(e.input_ids) for e in batch)
    ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    attn = torch.zeros((len(batch), width), dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.bool)
    for i, e in enumerate(batch):
        n = len(e.input_ids)
        ids[i, :n] = torch.tensor(e.input_ids)
        attn[i, :n] = 1
        mask[i, :n] = torch.tensor(e.loss_mask, dtype=torch.bool)
    return ids, attn, mask


def answer_loss(
    model: torch.nn.Module, ids: torch.Tensor, attn: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """Mean cross-entropy of the tokens with mask 1, given everything before them.

    The LM head only runs on the positions that predict a masked token (the answers are a minority of
    the tokens, and the head is a large share of the compute).
    """
    hidden = model.model(input_ids=ids, attention_mask=attn).last_hidden_state  # (B, T, H)
    predicts = mask[:, 1:]  # (B, T-1): position t predicts token t+1
    h = hidden[:, :-1][predicts]  # (N, H)
    targets = ids[:, 1:][predicts]  # (N,)
    logits = model.lm_head(h).float()  # (N, V)
    return F.cross_entropy(logits, targets)


def lr_at(step: int, settings: SFTSettings) -> float:
    """Linear warmup to ``lr``, then cosine decay to a tenth of it."""
    if step < settings.warmup_steps:
        return settings.lr * (step + 1) / settings.warmup_steps
    progress = (step - settings.warmup_steps) / max(1, settings.steps - settings.warmup_steps)
    return settings.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


def sft_train(
    model: torch.nn.Module,
    examples: Sequence[SFTExample],
    settings: SFTSettings,
    pad_id: int,
    seed: int,
    on_step: StepCallback | None = None,
) -> SFTStats:
    """Train ``model`` in place for ``settings.steps`` steps; deterministic given seed and thread count."""
    usable = [e for e in examples if len(e.input_ids) <= settings.max_seq_len]
    if not usable:
        raise ValueError(f"no SFT example fits max_seq_len={settings.max_seq_len}")
    torch.manual_seed(seed)
    rng = random.Random(seed)
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": settings.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=settings.lr,
        betas=(0.9, 0.95),
    )
    model.train()
    batches = _batches(usable, settings.batch_size, rng)
    losses: list[float] = []
    answer_tokens = 0
    for step in range(settings.steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, settings)
        ids, attn, mask = collate(next(batches), pad_id)
        loss = answer_loss(model, ids, attn, mask)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), settings.grad_clip)
        opt.step()
        losses.append(loss.item())
        answer_tokens += int(mask[:, 1:].sum())
        if on_step is not None:
            on_step(step, losses[-1])
    model.eval()
    tail = losses[-min(20, len(losses)) :]
    return SFTStats(
        steps=settings.steps,
        examples=len(usable),
        answer_tokens=answer_tokens,
        first_loss=losses[0],
        final_loss=sum(tail) / len(tail),
    )
