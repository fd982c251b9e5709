import pytest
import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

from coding_framework.embedded.answer_forward import answer_hidden


@pytest.fixture(params=[4, 2], ids=["mha", "gqa"])
def model(request) -> Qwen2ForCausalLM:
    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=request.param,
        max_position_embeddings=64,
        pad_token_id=0,
    )
    return Qwen2ForCausalLM(config)


def batch() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Three right-padded rows: a contiguous answer, a gapped one, and none at all."""
    torch.manual_seed(1)
    lengths = [12, 9, 7]
    ids = torch.randint(1, 64, (3, 12))
    attn = torch.zeros(3, 12, dtype=torch.long)
    for i, n in enumerate(lengths):
        attn[i, :n] = 1
        ids[i, n:] = 0
    predicts = torch.zeros(3, 12, dtype=torch.bool)
    predicts[0, 5:11] = True
    predicts[1, [2, 3, 7]] = True
    return ids, attn, predicts


def test_equals_the_full_forward_at_the_selected_positions(model) -> None:
    ids, attn, predicts = batch()
    full = model.model(input_ids=ids, attention_mask=attn).last_hidden_state[predicts]
    ours = answer_hidden(model, ids, attn, predicts)
    assert ours.shape == (int(predicts.sum()), 32)
    torch.testing.assert_close(ours, full, rtol=1e-5, atol=1e-5)


def test_gradients_equal_the_full_forward(model) -> None:
    ids, attn, predicts = batch()
    weights = torch.randn(int(predicts.sum()), 32)

    def grads(hidden: torch.Tensor) -> dict[str, torch.Tensor]:
        model.zero_grad()
        (hidden * weights).sum().backward()
        return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    full = grads(model.model(input_ids=ids, attention_mask=attn).last_hidden_state[predicts])
    ours = grads(answer_hidden(model, ids, attn, predicts))
    assert ours.keys() == full.keys()
    for name in full:
        # fp32 sums in another order: the absolute error grows with the gradient's scale (up to ~30 here).
        scale = max(1.0, float(full[name].abs().max()))
        torch.testing.assert_close(ours[name], full[name], rtol=1e-4, atol=1e-6 * scale, msg=name)


def test_no_selected_position_gives_an_empty_result(model) -> None:
    ids, attn, _ = batch()
    assert answer_hidden(model, ids, attn, torch.zeros_like(attn, dtype=torch.bool)).shape == (0, 32)
