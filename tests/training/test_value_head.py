from __future__ import annotations

import pytest
import torch

from coding_framework.embedded.architecture import init_model
from coding_framework.training.algorithms import get_algorithm
from coding_framework.training.losses import value_loss
from coding_framework.training.value_head import Critic, ValueHead
from tests.fakes.engine import tiny_tokenizer
from tests.fakes.models import TINY


def _policy():
    return init_model(TINY, tiny_tokenizer(), seed=0)


def _batch() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask, position_ids), (2, 6 + 5): left-padded prompts, right-padded responses."""
    ids = torch.tensor([[0, 0, 11, 12, 13, 14, 20, 21, 22, 0, 0], [5, 6, 7, 8, 9, 10, 30, 31, 32, 33, 34]])
    attn = torch.tensor([[0, 0, 1, 1, 1, 1, 1, 1, 1, 0, 0], [1] * 11])
    pos = (attn.cumsum(-1) - 1).clamp(min=0)
    return ids, attn, pos


def test_values_start_at_zero_and_follow_verls_alignment() -> None:
    critic = Critic.from_policy(_policy())
    ids, attn, pos = _batch()
    assert torch.equal(critic(ids, attn, pos), torch.zeros(2, 11))
    torch.nn.init.normal_(critic.head.proj.weight)
    full = critic(ids, attn, pos)  # (B, T)
    resp = critic.response_values(ids, attn, pos, response_length=5)  # (B, R)
    assert resp.shape == (2, 5)
    assert torch.equal(resp[1], full[1, 5:10])  # token t's value comes from the state before it
    assert torch.equal(resp[0, 3:], torch.zeros(2))  # padding


def test_separate_and_shared_trunks() -> None:
    policy = _policy()
    separate = Critic.from_policy(policy)
    shared = Critic.from_policy(policy, share_backbone=True)
    assert shared.backbone is policy and separate.backbone is not policy
    ids, attn, pos = _batch()
    torch.nn.init.normal_(shared.head.proj.weight)
    shared(ids, attn, pos).pow(2).mean().backward()
    assert policy.model.embed_tokens.weight.grad is not None  # value gradients reach the shared trunk
    with pytest.raises(ValueError, match="hidden size"):
        Critic(policy, ValueHead(7))


def test_ppo_value_loss_trains_the_head() -> None:
    critic = Critic.from_policy(_policy())
    ids, attn, pos = _batch()
    mask = attn[:, -5:].float()
    returns = torch.tensor([[1.0, 1.0, 1.0, 0, 0], [-1.0, -1.0, -1.0, -1.0, -1.0]])
    spec = get_algorithm("ppo", cliprange_value=10.0)
    opt = torch.optim.Adam(critic.parameters(), lr=1e-2)
    losses = []
    for _ in range(30):
        values = critic.response_values(ids, attn, pos, 5)
        loss, _ = value_loss(spec, values, returns, values.detach(), mask)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.1 * losses[0]


@pytest.mark.parametrize("shared", [False, True])
def test_save_and_load(tmp_path, shared: bool) -> None:
    policy = _policy()
    critic = Critic.from_policy(policy, share_backbone=shared)
    torch.nn.init.normal_(critic.head.proj.weight)
    ids, attn, pos = _batch()
    critic.save(tmp_path / "critic")
    assert (tmp_path / "critic" / "backbone").is_dir() is not shared
    loaded = Critic.load(tmp_path / "critic", policy=policy if shared else None)
    assert loaded.shared is shared
    assert torch.allclose(loaded(ids, attn, pos), critic(ids, attn, pos), atol=1e-6)
    if shared:
        with pytest.raises(ValueError, match="pass the policy"):
            Critic.load(tmp_path / "critic")
    with pytest.raises(FileNotFoundError, match="no critic"):
        Critic.load(tmp_path)
