"""KL regularization against a frozen reference policy, with verl's controllers and an early-stop guard.

Two places to put the KL (``KLConfig.mode``, settings in ``config.kl``):

* ``reward``: subtract ``beta * KL(t)`` from each generated token's reward before advantages, as
  verl's ``apply_kl_penalty`` does (Ziegler et al., https://arxiv.org/abs/1909.08593). ``beta`` comes from
  a fixed or adaptive controller (verl's ``FixedKLController`` / ``AdaptiveKLController``).
* ``loss``: add ``coef * agg(KL)`` to the policy loss, as verl's actor does with ``use_kl_loss`` (GRPO).

Estimators are Schulman's (http://joschu.net/blog/kl-approx.html) through verl's ``kl_penalty``: ``k1``
(``kl``), ``k2`` (``mse``), ``k3`` (``low_var_kl``), ``abs``, and the straight-through ``k1+``/``k3+``.
"""

from __future__ import annotations

import copy
import math
from typing import cast

import torch
from verl.trainer.config import KLControlConfig
from verl.trainer.ppo import core_algos
from verl.utils.torch_functional import masked_mean

from coding_framework.config.kl import KLConfig, KLEstimator

__all__ = [
    "KLConfig", "KLController", "KLEstimator", "KLMonitor", "ReferencePolicy", "kl_in_reward", "kl_loss",
    "kl_per_token", "make_controller", "response_log_probs",
]

KLController = core_algos.FixedKLController | core_algos.AdaptiveKLController


def kl_per_token(log_prob: torch.Tensor, ref_log_prob: torch.Tensor, estimator: KLEstimator) -> torch.Tensor:
    """(B, R) per-token KL estimate from (B, R) logprobs, by verl's ``kl_penalty`` (unmasked)."""
    # verl annotates torch.FloatTensor, the legacy CPU type; any float tensor on any device is what it takes.
    return core_algos.kl_penalty(cast(torch.FloatTensor, log_prob), cast(torch.FloatTensor, ref_log_prob),
                                 kl_penalty=estimator)


def make_controller(config: KLConfig) -> KLController:
    """verl's KL controller for ``config`` (``value`` is the current beta)."""
    return core_algos.get_kl_controller(KLControlConfig(type=config.controller, kl_coef=config.coef,
                                                         target_kl=config.target_kl, horizon=config.horizon))


def kl_in_reward(token_level_scores: torch.Tensor, old_log_prob: torch.Tensor, ref_log_prob: torch.Tensor,
                 response_mask: torch.Tensor, controller: KLController,
                 estimator: KLEstimator = "kl") -> tuple[torch.Tensor, dict[str, float]]:
    """``token_level_scores - beta * KL`` and metrics; updates ``controller`` with this batch's KL.

    All tensors (B, R). ``old_log_prob`` are the policy's logprobs of the sampled tokens, ``ref_log_prob``
    the reference's. Same arithmetic as verl's ``ray_trainer.apply_kl_penalty``.
    """
    kld = kl_per_token(old_log_prob, ref_log_prob, estimator) * response_mask  # (B, R)
    beta = controller.value
    rewards = token_level_scores - beta * kld  # (B, R)
    current = masked_mean(kld, mask=response_mask, axis=-1).mean().item()  # mean over rows of per-row means
    controller.update(current_kl=current, n_steps=token_level_scores.shape[0])
    return rewards, {"kl/reward_penalty": current, "kl/beta": float(beta)}


def kl_loss(log_prob: torch.Tensor, ref_log_prob: torch.Tensor, response_mask: torch.Tensor,
            estimator: KLEstimator = "low_var_kl",
            loss_agg_mode: str = "token-mean") -> tuple[torch.Tensor, dict[str, float]]:
    """The KL loss (scalar, grad through ``log_prob``), aggregated like the policy loss, as verl's actor."""
    kld = kl_per_token(log_prob, ref_log_prob, estimator)  # (B, R)
    mask = response_mask.to(kld.dtype)
    loss = core_algos.agg_loss(loss_mat=kld, loss_mask=mask, loss_agg_mode=loss_agg_mode)
    return loss, {"kl/loss": float(loss.detach())}


def response_log_probs(model: torch.nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                       position_ids: torch.Tensor, response_length: int) -> torch.Tensor:
    """fp32 ``log p(response token t | everything before it)``, (B, R), for a verl-layout batch.

    input_ids / attention_mask / position_ids: (B, P + R) with left-padded prompts and right-padded
    responses (``to_data_proto``'s layout); the last R columns are the responses.
    """
    logits = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids).logits
    logits = logits[:, -response_length - 1 : -1].float()  # (B, R, V): position t predicts token t + 1
    targets = input_ids[:, -response_length:]  # (B, R)
    return torch.log_softmax(logits, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)


class ReferencePolicy:
    """A frozen copy of the policy at the start of training (no grad, eval mode)."""

    def __init__(self, policy: torch.nn.Module) -> None:
        self.model = copy.deepcopy(policy).eval()
        self.model.requires_grad_(False)

    @torch.no_grad()
    def log_probs(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor,
                  response_length: int) -> torch.Tensor:
        """(B, R) reference logprobs of the response tokens."""
        return response_log_probs(self.model, input_ids, attention_mask, position_ids, response_length)


class KLMonitor:
    """Raises the early-stop flag when the KL to the reference stays above ``stop_kl``."""

    def __init__(self, stop_kl: float | None, patience: int = 1) -> None:
        self.stop_kl = stop_kl
        self.patience = patience
        self.over = 0
        self.reason: str | None = None

    @classmethod
    def from_config(cls, config: KLConfig) -> KLMonitor:
        return cls(config.stop_kl, config.stop_patience)

    @property
    def should_stop(self) -> bool:
        return self.reason is not None

    def update(self, kl: float, step: int) -> bool:
        """Record this step's mean per-token KL; True once training should stop."""
        if self.stop_kl is None or self.should_stop:
            return self.should_stop
        if math.isnan(kl) or kl > self.stop_kl:  # NaN counts as blown up
            self.over += 1
        else:
            self.over = 0
        if self.over >= self.patience:
            self.reason = (f"KL to the reference policy {kl:.4g} exceeded kl.stop_kl={self.stop_kl} for "
                           f"{self.over} consecutive step(s) (step {step}); lower the learning rate or raise "
                           "kl.coef")
        return self.should_stop
