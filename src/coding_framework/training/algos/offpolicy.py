"""The train/inference mismatch and its correction, from verl's rollout-correction helpers.

``recorded`` are the logprobs the rollout engine reported when it sampled; ``behaviour`` are the trainer's
own logprobs of the same tokens under the same weights (the policy version that sampled them). Their gap
is the engines' numerical mismatch (HF fp32 in-process: ~0; vLLM: kernels, batching, dtype). The auditor
checks recording instead: a token whose recorded logprob is not what its engine computed is a bug, while
the mismatch here is expected and only measured (``mismatch/*``) or corrected:

- ``tis``: token-level truncated importance sampling, weights ``min(exp(behaviour - recorded), cap)``
  (verl ``compute_rollout_correction_weights``, ``rollout_is="token"``);
- ``mis``: sequences whose geometric-mean ratio leaves ``[low, high]`` are masked (verl
  ``compute_rollout_rejection_mask``, ``rollout_rs="seq_mean_k1"``).

With a correction, ``behaviour`` also becomes the PPO old policy (verl's decoupled rollout correction).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from verl.trainer.ppo.rollout_corr_helper import (
    compute_rollout_correction_weights,
    compute_rollout_rejection_mask,
)

from coding_framework.config.training import AlgoConfig

__all__ = ["Correction", "correct", "mismatch_metrics"]


@dataclass
class Correction:
    """What the update uses instead of the recorded logprobs and mask, all (B, R)."""

    old_logprobs: torch.Tensor
    response_mask: torch.Tensor
    is_weights: torch.Tensor | None
    masked_share: float


def mismatch_metrics(recorded: torch.Tensor, behaviour: torch.Tensor, mask: torch.Tensor) -> dict[str, float]:
    """``mismatch/kl`` (KL(rollout || train), the direct estimator, as verl's ``kl``) and the token ratio
    ``exp(behaviour - recorded)``'s mean and max over the generated tokens."""
    m = mask.bool()
    if not m.any():
        return {"mismatch/kl": 0.0, "mismatch/ratio_mean": 1.0, "mismatch/ratio_max": 1.0}
    log_ratio = (behaviour - recorded)[m]
    ratio = log_ratio.clamp(-20, 20).exp()
    return {
        "mismatch/kl": float((-log_ratio).mean()),
        "mismatch/ratio_mean": float(ratio.mean()),
        "mismatch/ratio_max": float(ratio.max()),
    }


def correct(algo: AlgoConfig, recorded: torch.Tensor, behaviour: torch.Tensor,
            mask: torch.Tensor) -> Correction:
    """The update's inputs under ``algo.off_policy_correction`` (``none`` keeps the recorded ones).

    ``masked_share``: the share of generated tokens the correction changed: TIS, tokens whose weight hit
    the cap; MIS, tokens of masked sequences.
    """
    tokens = float(mask.sum().clamp(min=1))
    if algo.off_policy_correction == "none":
        return Correction(recorded, mask, None, 0.0)
    log_ratio = behaviour - recorded
    if algo.off_policy_correction == "tis":
        weights, _ = compute_rollout_correction_weights(
            log_ratio, mask, rollout_is="token", rollout_is_threshold=algo.tis_cap
        )
        capped = float(((log_ratio.clamp(-20, 20).exp() >= algo.tis_cap) * mask).sum()) / tokens
        return Correction(behaviour, mask, weights, capped)
    low, high = algo.mis_bounds
    kept, _ = compute_rollout_rejection_mask(
        log_ratio, mask, rollout_rs="seq_mean_k1", rollout_rs_threshold=f"{low}_{high}"
    )
    kept = kept.to(mask.dtype)
    return Correction(behaviour, kept, None, float((mask - kept).sum()) / tokens)
