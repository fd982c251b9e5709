"""KL in reward / as a loss against verl's own code paths, the controllers, the reference and the guard."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensordict import TensorDict
from verl.protocol import DataProto
from verl.trainer.ppo import core_algos
from verl.trainer.ppo.ray_trainer import apply_kl_penalty

from coding_framework.embedded.architecture import init_model
from coding_framework.testing.engine import tiny_tokenizer
from coding_framework.testing.models import TINY
from coding_framework.training.algos.kl import (
    KLConfig,
    KLMonitor,
    ReferencePolicy,
    kl_in_reward,
    kl_loss,
    make_controller,
    response_log_probs,
)


def _inputs() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    scores = torch.zeros(4, 6)
    scores[:, -1] = torch.tensor([1.0, 0.0, 1.0, 0.5])
    old = -torch.rand(4, 6, generator=g)
    ref = old + 0.3 * torch.randn(4, 6, generator=g)
    mask = torch.ones(4, 6)
    mask[1, 4:] = 0
    mask[2, 1:3] = 0
    return scores, old, ref, mask


@pytest.mark.parametrize("controller", ["fixed", "adaptive"])
def test_kl_in_reward_equals_verls_apply_kl_penalty(controller: str) -> None:
    scores, old, ref, mask = _inputs()
    config = KLConfig(mode="reward", estimator="low_var_kl", coef=0.05, controller=controller, target_kl=0.01,
                      horizon=100)
    ours, theirs = make_controller(config), make_controller(config)
    tensors = {"token_level_scores": scores, "old_log_probs": old, "ref_log_prob": ref, "response_mask": mask}
    data = DataProto(batch=TensorDict(tensors, batch_size=4))
    for _ in range(3):  # the controllers must evolve identically too
        rewards, metrics = kl_in_reward(scores, old, ref, mask, ours, config.estimator)
        data, verl_metrics = apply_kl_penalty(data, theirs, kl_penalty=config.estimator)
        assert torch.equal(rewards, data.batch["token_level_rewards"])
        assert metrics["kl/reward_penalty"] == pytest.approx(verl_metrics["actor/reward_kl_penalty"])
        assert ours.value == theirs.value
    if controller == "adaptive":  # KL far above target: beta grows
        assert ours.value > 0.05
    else:
        assert ours.value == 0.05


def test_kl_loss_equals_verls_actor_arithmetic() -> None:
    _, old, ref, mask = _inputs()
    log_prob = old.clone().requires_grad_(True)
    for estimator in ("low_var_kl", "k1", "k2", "k3+"):
        loss, metrics = kl_loss(log_prob, ref, mask, estimator, "token-mean")
        kld = core_algos.kl_penalty(logprob=log_prob, ref_logprob=ref, kl_penalty=estimator)
        expected = core_algos.agg_loss(loss_mat=kld, loss_mask=mask, loss_agg_mode="token-mean")
        assert torch.equal(loss, expected)
        assert metrics["kl/loss"] == pytest.approx(loss.item())
    loss, _ = kl_loss(log_prob, ref, mask)
    (grad,) = torch.autograd.grad(loss, log_prob)
    assert torch.equal(grad * (1 - mask), torch.zeros_like(grad))  # masked tokens get no gradient
    zero, _ = kl_loss(ref, ref, mask)
    assert zero.item() == 0.0


def test_reference_is_frozen_and_matches_the_policy_at_start() -> None:
    policy = init_model(TINY, tiny_tokenizer(), seed=0)
    reference = ReferencePolicy(policy)
    ids = torch.tensor([[0, 0, 5, 6, 7, 8, 9, 0], [1, 2, 3, 4, 5, 6, 7, 8]])
    attn = torch.tensor([[0, 0, 1, 1, 1, 1, 1, 0], [1] * 8])
    pos = (attn.cumsum(-1) - 1).clamp(min=0)
    ref = reference.log_probs(ids, attn, pos, response_length=3)
    assert ref.shape == (2, 3) and not ref.requires_grad
    with torch.no_grad():
        assert torch.allclose(response_log_probs(policy, ids, attn, pos, 3), ref)
        policy.model.embed_tokens.weight.add_(0.5)  # training moves the policy, not the reference
        assert not torch.allclose(response_log_probs(policy, ids, attn, pos, 3), ref)
    assert all(not p.requires_grad for p in reference.model.parameters())
    # the unpadded row agrees with a plain forward over its ids
    logits = policy(input_ids=ids[1:]).logits[0, 4:7]
    direct = torch.log_softmax(logits, -1).gather(-1, ids[1, 5:8].unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(response_log_probs(policy, ids, attn, pos, 3)[1], direct, atol=1e-5)


def test_monitor_stops_when_kl_blows_up() -> None:
    monitor = KLMonitor.from_config(KLConfig(mode="loss", stop_kl=0.5, stop_patience=2))
    assert [monitor.update(kl, step) for step, kl in enumerate([0.1, 0.6, 0.2, 0.7, 0.9, 0.1])] == \
        [False, False, False, False, True, True]
    assert "kl.stop_kl=0.5" in monitor.reason and "step 4" in monitor.reason
    assert KLMonitor(0.5).update(float("nan"), 0)
    never = KLMonitor(None)
    assert not any(never.update(k, i) for i, k in enumerate(np.linspace(0, 100, 5)))


def test_config_errors_say_how_to_fix() -> None:
    with pytest.raises(ValueError, match=r"set kl\.mode: reward"):
        KLConfig(mode="loss", controller="adaptive")
