"""Training the embedded model: a short code pretraining phase, then SFT with loss on answer tokens only.

Both phases use AdamW (betas 0.9/0.95, decay on matrices only) with linear warmup and cosine decay, and
are deterministic given the seed and the torch thread count.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from transformers import Qwen2ForCausalLM

from coding_framework.config.embedded import PhaseConfig, PretrainConfig, SFTConfig
from coding_framework.embedded.answer_forward import answer_hidden
from coding_framework.embedded.data import SFTExample

StepCallback = Callable[[int, float], None]
LossFn = Callable[[], tuple[torch.Tensor, int]]


@dataclass(frozen=True)
class PhaseStats:
    steps: int
    rows: int
    loss_tokens: int
    first_loss: float
    final_loss: float


def lr_at(step: int, phase: PhaseConfig) -> float:
    """Linear warmup to ``lr``, then cosine decay to a tenth of it."""
    if step < phase.warmup_steps:
        return phase.lr * (step + 1) / phase.warmup_steps
    progress = (step - phase.warmup_steps) / max(1, phase.steps - phase.warmup_steps)
    return phase.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


def _run_phase(
    model: torch.nn.Module, phase: PhaseConfig, next_loss: LossFn, rows: int, on_step: StepCallback | None
) -> PhaseStats:
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": phase.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=phase.lr,
        betas=(0.9, 0.95),
    )
    model.train()
    losses: list[float] = []
    loss_tokens = 0
    for step in range(phase.steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, phase)
        loss, n_tokens = next_loss()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), phase.grad_clip)
        opt.step()
        losses.append(loss.item())
        loss_tokens += n_tokens
        if on_step is not None:
            on_step(step, losses[-1])
    model.eval()
    tail = losses[-min(20, len(losses)) :]
    return PhaseStats(
        steps=phase.steps,
        rows=rows,
        loss_tokens=loss_tokens,
        first_loss=losses[0],
        final_loss=sum(tail) / len(tail),
    )


# -- pretraining -----------------------------------------------------------------------------------------


def packed_rows(
    docs: Sequence[list[int]], seq_len: int, batch_size: int, sep_id: int, rng: random.Random
) -> Iterator[torch.Tensor]:
    """Endless (batch_size, seq_len) batches of shuffled documents joined by ``sep_id`` and cut into rows."""
    stream: list[int] = []
    need = batch_size * seq_len
    while True:
        while len(stream) < need:
            order = list(docs)
            rng.shuffle(order)
            for doc in order:
                stream.extend(doc)
                stream.append(sep_id)
        yield torch.tensor(stream[:need]).view(batch_size, seq_len)
        del stream[:need]


def pretrain(
    model: torch.nn.Module,
    docs: Sequence[list[int]],
    settings: PretrainConfig,
    sep_id: int,
    seed: int,
    on_step: StepCallback | None = None,
) -> PhaseStats | None:
    """Next-token loss on every token of packed ``docs``; None when ``settings.steps`` is 0."""
    if settings.steps == 0:
        return None
    if not docs:
        raise ValueError("no documents to pretrain on")
    torch.manual_seed(seed)
    batches = packed_rows(docs, settings.seq_len, settings.batch_size, sep_id, random.Random(seed))

    def next_loss() -> tuple[torch.Tensor, int]:
        x = next(batches)  # (B, T)
        return model(input_ids=x, labels=x).loss, x[:, 1:].numel()

    return _run_phase(model, settings, next_loss, len(docs), on_step)


# -- SFT -------------------------------------------------------------------------------------------------


def _batches(
    examples: Sequence[SFTExample], batch_size: int, rng: random.Random
) -> Iterator[list[SFTExample]]:
    """Endless length-grouped batches: shuffle, sort windows of 16 batches by length, shuffle the batches."""
    window = batch_size * 16
    while True:
        order = list(examples)
        rng.shuffle(order)
        batches: list[list[SFTExample]] = []
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
    model: Qwen2ForCausalLM, ids: torch.Tensor, attn: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """Mean cross-entropy of the tokens with mask 1, given everything before them.

    The last decoder layer and the LM head only run on the positions that predict a masked token (the
    answers are a minority of the tokens, and the head is a large share of the compute).
    """
    predicts = F.pad(mask[:, 1:], (0, 1))  # (B, T): position t predicts token t+1
    logits = model.lm_head(answer_hidden(model, ids, attn, predicts)).float()  # (N, V)
    return F.cross_entropy(logits, ids[:, 1:][mask[:, 1:]])


def sft_train(
    model: Qwen2ForCausalLM,
    examples: Sequence[SFTExample],
    settings: SFTConfig,
    pad_id: int,
    seed: int,
    on_step: StepCallback | None = None,
) -> PhaseStats:
    """Fine-tune ``model`` in place on ``examples`` that fit ``settings.max_seq_len``."""
    usable = [e for e in examples if len(e.input_ids) <= settings.max_seq_len]
    if not usable:
        raise ValueError(f"no SFT example fits max_seq_len={settings.max_seq_len}")
    torch.manual_seed(seed)
    batches = _batches(usable, settings.batch_size, random.Random(seed))

    def next_loss() -> tuple[torch.Tensor, int]:
        ids, attn, mask = collate(next(batches), pad_id)
        return answer_loss(model, ids, attn, mask), int(mask[:, 1:].sum())

    return _run_phase(model, settings, next_loss, len(usable), on_step)
