"""Advantages, policy and value losses for an ``AlgorithmSpec``, computed by verl's ``core_algos``.

Nothing here re-derives the maths: estimators and policy losses come from verl's registries
(``get_adv_estimator_fn``, ``get_policy_loss_fn``), called with the config objects they expect
(``AlgoConfig`` for estimators, ``ActorConfig`` for losses) built from the spec. Every tensor is
(B, R): B trajectories, R response tokens, masked by ``response_mask``.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from verl.trainer.config import AlgoConfig
from verl.trainer.ppo import core_algos
from verl.workers.config import ActorConfig, PolicyLossConfig

from coding_framework.training.algos.algorithms import AlgorithmSpec


def _call_supported(fn: Callable[..., Any], **kwargs: Any) -> Any:
    """Call a verl estimator with the keywords its signature accepts (they take different subsets)."""
    params = inspect.signature(fn).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return fn(**kwargs)
    return fn(**{k: v for k, v in kwargs.items() if k in params})


def algo_config(spec: AlgorithmSpec, gamma: float | None = None, lam: float | None = None) -> AlgoConfig:
    """verl's ``AlgoConfig`` for ``spec`` (what its advantage estimators read)."""
    return AlgoConfig(gamma=spec.gamma if gamma is None else gamma, lam=spec.lam if lam is None else lam,
                      adv_estimator=spec.adv_estimator, norm_adv_by_std_in_grpo=spec.norm_adv_by_std)


@functools.lru_cache(maxsize=32)
def actor_config(spec: AlgorithmSpec) -> ActorConfig:
    """verl's ``ActorConfig`` for ``spec`` (what its policy losses read).

    The batch sizes are fixed at 1: verl validates them, but the loss functions never read them.
    ``global_batch_info`` stays empty, so ``agg_loss`` normalizes over the tokens of the batch it is given.
    """
    return ActorConfig(strategy="fsdp", ppo_mini_batch_size=1, ppo_micro_batch_size_per_gpu=1, rollout_n=1,
                       clip_ratio=spec.clip_ratio_low, clip_ratio_low=spec.clip_ratio_low,
                       clip_ratio_high=spec.clip_ratio_high, clip_ratio_c=spec.clip_ratio_c,
                       loss_agg_mode=spec.loss_agg_mode,
                       policy_loss=PolicyLossConfig(loss_mode=spec.policy_loss))


def compute_advantages(spec: AlgorithmSpec, token_level_rewards: torch.Tensor, response_mask: torch.Tensor,
                       group_ids: Sequence[str], values: torch.Tensor | None = None,
                       gamma: float | None = None,
                       lam: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(advantages, returns), both (B, R), from verl's ``spec.adv_estimator``.

    token_level_rewards: (B, R) float, usually the reward at the last generated token (minus any KL
    penalty). response_mask: (B, R) {0, 1}. group_ids: B ids; rows sharing one form a group (GRPO, RLOO).
    values: (B, R) critic values, required when ``spec.needs_critic``.
    """
    if spec.needs_critic and values is None:
        raise ValueError(f"{spec.name} needs critic values (B, R) for {spec.adv_estimator}")
    if len(group_ids) != token_level_rewards.shape[0]:
        raise ValueError(f"{len(group_ids)} group ids for {token_level_rewards.shape[0]} rows")
    config = algo_config(spec, gamma, lam)
    fn = core_algos.get_adv_estimator_fn(spec.adv_estimator)
    mask = response_mask.to(token_level_rewards.dtype)
    return _call_supported(
        fn, token_level_rewards=token_level_rewards, response_mask=mask, values=values,
        index=np.array(list(group_ids), dtype=object), norm_adv_by_std_in_grpo=spec.norm_adv_by_std,
        gamma=config.gamma, lam=config.lam, config=config,
    )


def policy_loss(spec: AlgorithmSpec, old_log_prob: torch.Tensor, log_prob: torch.Tensor,
                advantages: torch.Tensor, response_mask: torch.Tensor,
                is_weights: torch.Tensor | None = None) -> tuple[torch.Tensor, dict[str, float]]:
    """The clipped policy-gradient loss (a scalar) and metrics, from verl's ``spec.policy_loss``.

    old_log_prob: (B, R) logprobs at rollout (or at the start of the update); log_prob: (B, R) under the
    current weights, with grad. Metrics: ``losses/pg_loss``, ``losses/clipfrac`` (share of tokens where
    the clipped term was taken), ``losses/clipfrac_lower`` (dual clip), ``losses/approx_kl`` (mean of
    old - new over the mask, verl's ``ppo_kl``). ``is_weights``: (B, R) per-token importance weights of an
    off-policy correction (verl's ``rollout_is_weights``), multiplied into the token losses.
    """
    fn = core_algos.get_policy_loss_fn(spec.policy_loss)
    extra = {} if is_weights is None else {"rollout_is_weights": is_weights}
    loss, verl_metrics = fn(old_log_prob, log_prob, advantages, response_mask.to(log_prob.dtype),
                            loss_agg_mode=spec.loss_agg_mode, config=actor_config(spec), **extra)
    names = {"actor/pg_clipfrac": "losses/clipfrac", "actor/ppo_kl": "losses/approx_kl",
             "actor/pg_clipfrac_lower": "losses/clipfrac_lower"}
    metrics = {names.get(k, k): float(v) for k, v in verl_metrics.items()}
    metrics["losses/pg_loss"] = float(loss.detach())
    return loss, metrics


def value_loss(spec: AlgorithmSpec, vpreds: torch.Tensor, returns: torch.Tensor, values: torch.Tensor,
               response_mask: torch.Tensor) -> tuple[torch.Tensor, dict[str, float]]:
    """verl's clipped value loss ``0.5 * max((v - R)^2, (clip(v, v_old +- eps) - R)^2)``, aggregated by
    ``spec.loss_agg_mode``. vpreds: (B, R) with grad; returns, values: (B, R) from the rollout."""
    loss, clipfrac = core_algos.compute_value_loss(vpreds, returns, values, response_mask.to(vpreds.dtype),
                                                   cliprange_value=spec.cliprange_value,
                                                   loss_agg_mode=spec.loss_agg_mode)
    return loss, {"losses/value_loss": float(loss.detach()), "losses/vf_clipfrac": float(clipfrac)}


def dynamic_sampling_filter(rewards: Sequence[float], group_ids: Sequence[str]) -> list[int]:
    """Indices of the rows to keep: DAPO drops every group of two or more whose rewards are all equal.

    Such a group has zero advantage everywhere, so it only dilutes the batch. A lone row is kept, as verl
    does (its group has no variance to measure).
    """
    if len(rewards) != len(group_ids):
        raise ValueError(f"{len(rewards)} rewards for {len(group_ids)} group ids")
    members: dict[str, list[int]] = {}
    for i, g in enumerate(group_ids):
        members.setdefault(g, []).append(i)
    dropped = {g for g, rows in members.items()
               if len(rows) > 1 and float(np.std([rewards[i] for i in rows])) == 0.0}
    return [i for i, g in enumerate(group_ids) if g not in dropped]


def rows_for_update(spec: AlgorithmSpec, rewards: Sequence[float], group_ids: Sequence[str]) -> list[int]:
    """The rows the update uses: all of them, or the dynamic-sampling survivors when the spec asks."""
    return dynamic_sampling_filter(rewards, group_ids) if spec.dynamic_sampling else list(range(len(rewards)))
