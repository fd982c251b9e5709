"""SFT's loss runs the output layer only where a token is labelled; it must equal the model's own loss over
the whole logits (and its gradient), whatever the padding."""

from __future__ import annotations

import torch

from coding_framework.embedded.architecture import init_model
from coding_framework.testing.engine import tiny_tokenizer
from coding_framework.testing.models import TINY
from coding_framework.training.sft import IGNORE, fit, mean_loss

ROWS = [([5, 6, 7, 8, 9, 10], [IGNORE, IGNORE, IGNORE, 8, 9, 10]),
        ([11, 12, 13], [IGNORE, 12, 13]),
        ([14, 15, 16, 17], [IGNORE, IGNORE, IGNORE, 17])]


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return init_model(TINY, tiny_tokenizer(), seed=0)


def _full_loss(model: torch.nn.Module, reduction: str) -> torch.Tensor:
    """Cross-entropy from the model's full (B, T, V) logits, one padded batch."""
    width = max(len(x) for x, _ in ROWS)
    ids = torch.tensor([x + [0] * (width - len(x)) for x, _ in ROWS])
    labels = torch.tensor([y + [IGNORE] * (width - len(y)) for _, y in ROWS])
    attention = torch.tensor([[1] * len(x) + [0] * (width - len(x)) for x, _ in ROWS])
    logits = model(input_ids=ids, attention_mask=attention).logits[:, :-1].float()
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1),
                                             ignore_index=IGNORE, reduction=reduction)


def test_the_heldout_loss_equals_the_full_logits_loss() -> None:
    model = _model()
    with torch.no_grad():
        expected = float(_full_loss(model, "mean"))
    assert abs(mean_loss(model, tiny_tokenizer(), ROWS, micro_batch_size=3) - expected) < 1e-5
    assert abs(mean_loss(model, tiny_tokenizer(), ROWS, micro_batch_size=1) - expected) < 1e-5


def test_a_step_trains_on_the_full_logits_loss() -> None:
    model = _model()
    with torch.no_grad():
        expected = float(_full_loss(model, "mean"))
    losses = fit(model, tiny_tokenizer(), ROWS, epochs=2, lr=1e-2, micro_batch_size=3, seed=0)
    assert abs(losses[0] - expected) < 1e-5  # one batch: the epoch's loss is the loss before its step
    assert losses[1] < losses[0]
