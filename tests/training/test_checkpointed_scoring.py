"""Gradient checkpointing's scoring pass (whole rows, no shared prompt cache) gives the cached pass's
logprobs and gradients, so switching it on changes memory and time only."""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import AutoModelForCausalLM

from coding_framework.testing.models import tiny_model_dir
from coding_framework.training.batch import TrajectoryBatch, score


def _batch() -> TrajectoryBatch:
    gen = torch.Generator().manual_seed(0)
    lengths = torch.tensor([5, 3, 6, 2])
    ids = torch.randint(5, 90, (4, 6), generator=gen)
    mask = (torch.arange(6) < lengths.unsqueeze(-1)).float()
    return TrajectoryBatch(prompts=[torch.randint(5, 90, (7,), generator=gen), torch.randint(5, 90, (4,))],
                           prompt_index=torch.tensor([0, 0, 1, 1]), response_ids=ids, response_len=lengths,
                           response_mask=mask, old_logprobs=torch.zeros(4, 6), rewards=torch.zeros(4),
                           group_ids=["a", "a", "b", "b"])


def test_checkpointed_scoring_equals_the_cached_pass(tmp_path: Path) -> None:
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir(tmp_path / "m"), dtype=torch.float32)
    batch = _batch()
    results = []
    for checkpointed in (False, True):
        model.zero_grad()
        if checkpointed:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            model.train()  # checkpointing recomputes in train mode only (PolicyUpdate switches it)
        scored = score(model, batch, entropy=True, checkpointed=checkpointed)
        (scored.logprobs.sum() + scored.entropy.sum()).backward()
        grads = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
        results.append((scored.logprobs.detach(), grads))
        model.eval()
    assert torch.allclose(results[0][0], results[1][0], atol=1e-5)
    assert torch.allclose(results[0][1], results[1][1], atol=1e-4)
    assert (results[1][0] * (1 - batch.response_mask)).abs().sum() == 0  # padding stays zero
