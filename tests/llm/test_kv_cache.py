"""The preallocated decoding cache gives transformers' DynamicCache results, and keeps or repeats rows."""

from __future__ import annotations

import pytest
import torch
from transformers import DynamicCache

from coding_framework.llm.kv_cache import PreallocatedLayer, decoding_cache


def _decode(model, cache, ids: torch.Tensor, steps: int, select: torch.Tensor | None = None) -> torch.Tensor:
    """Prefill ``ids`` then feed the greedy token ``steps`` times; logits of every step, stacked."""
    out = model(input_ids=ids, past_key_values=cache, use_cache=True)
    logits = [out.logits[:, -1]]
    length = ids.shape[1]
    for _ in range(steps):
        tok = logits[-1].argmax(-1, keepdim=True)  # (B, 1)
        pos = torch.full_like(tok, length)
        out = model(input_ids=tok, position_ids=pos, past_key_values=cache, use_cache=True)
        logits.append(out.logits[:, -1])
        length += 1
    return torch.stack(logits, 1)  # (B, steps + 1, V)


@torch.inference_mode()
def test_matches_dynamic_cache(tiny_model) -> None:
    ids = torch.randint(5, 300, (3, 9), generator=torch.Generator().manual_seed(0))
    cache = decoding_cache(tiny_model.config, capacity=9 + 6)
    assert all(isinstance(layer, PreallocatedLayer) for layer in cache.layers)
    ours = _decode(tiny_model, cache, ids, steps=6)
    theirs = _decode(tiny_model, DynamicCache(config=tiny_model.config), ids, steps=6)
    torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)
    assert cache.get_seq_length() == 9 + 6


@torch.inference_mode()
def test_selecting_rows_keeps_and_repeats_their_states(tiny_model) -> None:
    ids = torch.randint(5, 300, (2, 7), generator=torch.Generator().manual_seed(1))
    cache = decoding_cache(tiny_model.config, capacity=7 + 4)
    tiny_model(input_ids=ids, past_key_values=cache, use_cache=True)
    cache.batch_select_indices(torch.tensor([1, 1, 0]))
    tok = torch.tensor([[11], [11], [11]])
    got = tiny_model(input_ids=tok, position_ids=torch.full_like(tok, 7), past_key_values=cache).logits[:, -1]
    full = tiny_model(input_ids=torch.cat([ids[[1, 1, 0]], tok], dim=1)).logits[:, -1]
    torch.testing.assert_close(got, full, atol=1e-5, rtol=1e-5)


@torch.inference_mode()
def test_overflow_is_an_error(tiny_model) -> None:
    cache = decoding_cache(tiny_model.config, capacity=4)
    with pytest.raises(ValueError, match="cannot hold 5"):
        tiny_model(input_ids=torch.ones((1, 5), dtype=torch.long), past_key_values=cache, use_cache=True)


def test_sliding_window_models_keep_transformers_cache(tiny_model) -> None:
    config = tiny_model.config.__class__(**{**tiny_model.config.to_dict(), "use_sliding_window": True})
    assert isinstance(decoding_cache(config, capacity=8), DynamicCache)
