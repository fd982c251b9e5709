"""Supervised fine-tuning on chat turns: encode a request and its answer the way a TokenSession renders
them, and fit or score a model on the answer tokens only. The Reviewer's warm start (``review_sft``) and
the Generator's (``generator_sft``) and the repository agent's (``repository_sft``) train through it; the
last two share ``fit_role``, their held-out gate and their progress lines."""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any, Protocol

import torch

from coding_framework.llm.session import TokenSession, inspect_template

__all__ = [
    "IGNORE", "Row", "WarmStartSettings", "encode_turn", "fit", "fit_metrics", "fit_role", "gate_failure",
    "mean_loss", "progress_lines", "release_freed_memory",
]

IGNORE = -100
"""The label torch's cross-entropy skips: every token that is not the answer's own."""

Row = tuple[list[int], list[int]]
"""(input ids, labels) of one example."""


def encode_turn(
    tokenizer: object, messages: Sequence[dict[str, str]], answer: str, max_answer_tokens: int
) -> Row:
    """The rendered ``messages`` and generation prompt, then ``answer`` (cut to ``max_answer_tokens``) and
    the token that ends the turn, so the model learns to stop; labels are IGNORE except on those."""
    session = TokenSession(tokenizer)
    session.add_messages(list(messages))
    session.add_generation_prompt()
    encode = tokenizer(answer, add_special_tokens=False)["input_ids"]  # type: ignore[operator]
    end = tokenizer(inspect_template(tokenizer).assistant_suffix,  # type: ignore[operator]
                    add_special_tokens=False)["input_ids"]
    target = [*list(encode)[:max_answer_tokens], *end[:1]]
    return [*session.ids, *target], [IGNORE] * len(session) + target


def _batches(rows: Sequence[Row], order: Sequence[int], size: int, pad: int, device: torch.device
             ) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    out = []
    for at in range(0, len(order), size):
        batch = [rows[i] for i in order[at : at + size]]
        width = max(len(ids) for ids, _ in batch)
        ids = torch.tensor([x + [pad] * (width - len(x)) for x, _ in batch], device=device)  # (B, T)
        labels = torch.tensor([y + [IGNORE] * (width - len(y)) for _, y in batch], device=device)
        attention = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x, _ in batch], device=device)
        out.append((ids, labels, attention))
    return out


def _bucketed(rows: Sequence[Row], order: list[int], size: int, generator: torch.Generator) -> list[int]:
    """``order`` with similar lengths batched together (less padding to compute on): sorted by length
    within windows of 16 batches, the batches then shuffled."""
    window = size * 16
    batches = []
    for at in range(0, len(order), window):
        chunk = sorted(order[at : at + window], key=lambda i: len(rows[i][0]))
        batches += [chunk[b : b + size] for b in range(0, len(chunk), size)]
    return [i for b in torch.randperm(len(batches), generator=generator).tolist() for i in batches[b]]


def _answer_logits(model: torch.nn.Module, ids: torch.Tensor, labels: torch.Tensor, attention: torch.Tensor
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """fp32 logits (N, V) at the positions that predict a labelled token, and those tokens (N,). The output
    layer runs only there: an answer is a fraction of its row, and full (B, T, V) logits with their softmax
    and gradient cost a SmolLM2 warm start 18% more peak memory and 39% more time a batch
    (``benchmarks/training/warm_start_memory.py``)."""
    h = model.get_decoder()(input_ids=ids, attention_mask=attention).last_hidden_state  # type: ignore[operator]
    target = labels[:, 1:]
    sel = target != IGNORE  # (B, T - 1)
    logits = model.get_output_embeddings()(h[:, :-1][sel]).float()  # type: ignore[operator]
    return logits, target[sel]


def _pad_id(tokenizer: object) -> int:
    return int(getattr(tokenizer, "pad_token_id", None) or 0)


def fit(
    model: torch.nn.Module,
    tokenizer: object,
    rows: Sequence[Row],
    *,
    epochs: int,
    lr: float,
    micro_batch_size: int,
    seed: int,
    parameters: Sequence[torch.nn.Parameter] | None = None,
    on_batch: Callable[[int, int], None] | None = None,
) -> list[float]:
    """Fine-tune ``parameters`` (default: every trainable one of ``model``) on ``rows``: mean token
    cross-entropy on the labelled tokens, AdamW, ``epochs`` shuffled passes. Each epoch's mean loss.
    ``on_batch`` (a callable taking the batches done and the total) reports progress."""
    device = next(model.parameters()).device
    params = list(parameters) if parameters is not None else [
        p for p in model.parameters() if p.requires_grad
    ]
    optimizer = torch.optim.AdamW(params, lr=lr)
    generator = torch.Generator().manual_seed(seed)
    per_epoch = -(-len(rows) // micro_batch_size)
    epoch_losses = []
    for epoch in range(epochs):
        order = _bucketed(rows, torch.randperm(len(rows), generator=generator).tolist(), micro_batch_size,
                          generator)
        losses = []
        for i, (ids, labels, attention) in enumerate(
            _batches(rows, order, micro_batch_size, _pad_id(tokenizer), device)
        ):
            logits, target = _answer_logits(model, ids, labels, attention)
            loss = torch.nn.functional.cross_entropy(logits, target)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
            if on_batch is not None:
                on_batch(epoch * per_epoch + i + 1, epochs * per_epoch)
        epoch_losses.append(sum(losses) / len(losses))
    return epoch_losses


@torch.no_grad()
def mean_loss(model: torch.nn.Module, tokenizer: object, rows: Sequence[Row], micro_batch_size: int) -> float:
    """Cross-entropy per labelled token over ``rows`` (every token weighs the same, whatever its batch)."""
    device = next(model.parameters()).device
    total, tokens = 0.0, 0
    for ids, labels, attention in _batches(rows, range(len(rows)), micro_batch_size, _pad_id(tokenizer),
                                           device):
        logits, target = _answer_logits(model, ids, labels, attention)
        total += float(torch.nn.functional.cross_entropy(logits, target, reduction="sum"))
        tokens += len(target)
    return total / max(tokens, 1)


class WarmStartSettings(Protocol):
    epochs: int
    lr: float
    micro_batch_size: int
    max_heldout_loss_ratio: float


def fit_role(engine: Any, model: torch.nn.Module, role: str, rows: Sequence[Row], held: Sequence[Row],
             settings: WarmStartSettings, seed: int,
             on_batch: Callable[[int, int], None] | None) -> tuple[list[float], float, float]:
    """Fit ``role``'s adapter when ``engine`` decodes through per-role adapters, else ``model``, on ``rows``;
    (the epochs' losses, the held-out loss before, after), the held-out loss NaN without ``held``."""
    tokenizer = engine.tokenizer
    adapters: Any = getattr(engine, "adapters", None)
    adapter = adapters.adapter_for(role) if adapters is not None else None
    target = adapters.base if adapter is not None else model
    params = adapters.parameters(adapter) if adapter is not None else None
    with adapters.using(adapter) if adapter is not None else nullcontext():
        before = mean_loss(target, tokenizer, held, settings.micro_batch_size) if held else float("nan")
        losses = fit(target, tokenizer, rows, epochs=settings.epochs, lr=settings.lr,
                     micro_batch_size=settings.micro_batch_size, seed=seed, parameters=params,
                     on_batch=on_batch)
        after = mean_loss(target, tokenizer, held, settings.micro_batch_size) if held else float("nan")
    release_freed_memory()
    return losses, before, after


def release_freed_memory() -> bool:
    """Hand the C heap's free pages back to the OS (glibc's ``malloc_trim``); False where there is none.

    A fit's activations are freed when it ends, but glibc keeps the pages: without this a trainer held the
    warm start's peak (13 GB of 17) through every RL step after it, room a second run or a vLLM server needs.
    """
    name = ctypes.util.find_library("c")
    try:
        trim = ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to trim
        return False
    return bool(trim and trim(0))


def fit_metrics(rows: Sequence[Row], held: Sequence[Row], losses: Sequence[float], before: float,
                after: float, started: float) -> dict[str, float]:
    """A warm start's metrics under ``warm_start/``: its examples, first and last epoch's loss, the held-out
    loss before and after, and the seconds since ``started`` (``time.perf_counter``)."""
    return {
        "warm_start/examples": float(len(rows)),
        "warm_start/loss_first_epoch": losses[0],
        "warm_start/loss_last_epoch": losses[-1],
        "warm_start/heldout_examples": float(len(held)),
        "warm_start/heldout_loss_before": before,
        "warm_start/heldout_loss_after": after,
        "warm_start/seconds": time.perf_counter() - started,
    }


def gate_failure(before: float, after: float, ratio: float, section: str) -> str | None:
    """Why the held-out gate refuses a warm start (after must be below ``ratio`` x before), or None."""
    if after < ratio * before or before != before:  # NaN: no held-out examples, nothing to gate on
        return None
    return (f"the warm start did not lower the held-out loss enough: {before:.4f} -> {after:.4f} (the gate "
            f"wants below {ratio:g} x before); lower {section}.lr or epochs")


def progress_lines(label: str) -> Callable[[int, int], None]:
    """A batch reporter for ``fit`` that prints at most one line every 30 s, and the last batch."""
    last = [0.0]

    def report(done: int, total: int) -> None:
        now = time.perf_counter()
        if done == total or now - last[0] > 30:
            last[0] = now
            print(f"{label}: batch {done}/{total}", file=sys.stderr, flush=True)

    return report
