"""The PPO critic's value head: zero at the start, one value per hidden state, trainable by verl's loss."""

from __future__ import annotations

import torch

from coding_framework.config.kl import KLConfig
from coding_framework.config.training import AlgoConfig, OptimConfig
from coding_framework.embedded.architecture import init_model
from coding_framework.testing.engine import tiny_tokenizer
from coding_framework.testing.models import TINY
from coding_framework.training.algos.algorithms import get_algorithm
from coding_framework.training.algos.losses import value_loss
from coding_framework.training.algos.value_head import ValueHead
from coding_framework.training.update import PolicyUpdate


def test_values_start_at_zero_one_per_state() -> None:
    head = ValueHead(8)
    hidden = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(0))  # (B, T, H)
    assert torch.equal(head(hidden), torch.zeros(2, 5))
    torch.nn.init.normal_(head.proj.weight)
    values = head(hidden.to(torch.bfloat16))  # (B, T), computed in fp32
    assert values.shape == (2, 5) and values.dtype == torch.float32
    assert torch.allclose(values[1, 3], head.proj(hidden[1, 3].bfloat16().float()).squeeze())


def test_ppo_value_loss_trains_the_head() -> None:
    head = ValueHead(8)
    hidden = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(1))
    mask = torch.tensor([[1.0, 1.0, 1.0, 0, 0], [1.0] * 5])
    returns = torch.tensor([[1.0, 1.0, 1.0, 0, 0], [-1.0] * 5])
    spec = get_algorithm("ppo", cliprange_value=10.0)
    opt = torch.optim.Adam(head.parameters(), lr=5e-2)
    losses = []
    for _ in range(60):
        values = head(hidden) * mask
        loss, _ = value_loss(spec, values, returns, values.detach(), mask)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.1 * losses[0]


def test_the_update_puts_a_critic_on_the_policys_trunk_only_when_the_spec_needs_one() -> None:
    model = init_model(TINY, tiny_tokenizer(), 0)

    def make(name: str) -> PolicyUpdate:
        return PolicyUpdate(model, get_algorithm(name), AlgoConfig(), OptimConfig(), KLConfig(), 10, seed=0)

    ppo, grpo = make("ppo"), make("grpo")
    assert grpo.critic is None and grpo.critic_optimizer is None
    assert ppo.critic is not None and ppo.critic.hidden_size == model.config.hidden_size
    assert ppo.critic.proj.weight.device == next(model.parameters()).device
