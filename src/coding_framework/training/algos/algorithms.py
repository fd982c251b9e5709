"""RL algorithms as data: a registry of specs the trainer reads, never ``if algo == ...``.

A spec names verl's advantage estimator and policy loss (looked up through ``get_adv_estimator_fn`` /
``get_policy_loss_fn`` in ``losses``), how token losses aggregate, the PPO clip range (asymmetric for
DAPO's clip-higher), whether a critic is trained and whether zero-variance groups are dropped.

Registry: ``ALGORITHMS`` (a dict), ``register_algorithm`` (a decorator on a spec factory) and
``get_algorithm`` (the getter, whose error lists the valid names), like verl's ``core_algos``.

A ``TrainingConfig`` names an algorithm and overrides spec fields through ``config.algorithm``
(``AlgorithmName``, ``AlgorithmOverrides``), which a test pins to this registry and to ``AlgorithmSpec``:
adding an algorithm is a factory here plus its name there (see that module's docstring).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from coding_framework.config.algorithm import LossAggMode
from coding_framework.registry import Registry

__all__ = ["ALGORITHMS", "AlgorithmSpec", "LossAggMode", "SpecFactory", "get_algorithm", "register_algorithm"]


@dataclass(frozen=True)
class AlgorithmSpec:
    """Everything the trainer needs to know about an algorithm.

    Attributes:
        name: the registry name.
        adv_estimator: a verl advantage estimator name (``core_algos.ADV_ESTIMATOR_REGISTRY``).
        policy_loss: a verl policy loss name (``POLICY_LOSS_REGISTRY``); ``vanilla`` is the PPO clip loss.
        loss_agg_mode: how ``agg_loss`` reduces the (B, R) token losses to a scalar.
        clip_ratio_low / clip_ratio_high: the ratio is clipped to ``[1 - low, 1 + high]``.
        clip_ratio_c: dual-clip bound for negative advantages (https://arxiv.org/abs/1912.09729).
        needs_critic: train a value head and feed its values to the estimator (PPO/GAE).
        cliprange_value: the value-loss clip range (critic only).
        dynamic_sampling: drop groups whose rewards are all equal before the update (DAPO).
        norm_adv_by_std: GRPO divides by the group's reward std (off = Dr. GRPO).
        gamma / lam: discount and GAE lambda.
        paper: where the algorithm comes from.
    """

    name: str
    adv_estimator: str
    policy_loss: str = "vanilla"
    loss_agg_mode: LossAggMode = "token-mean"
    clip_ratio_low: float = 0.2
    clip_ratio_high: float = 0.2
    clip_ratio_c: float = 3.0
    needs_critic: bool = False
    cliprange_value: float = 0.5
    dynamic_sampling: bool = False
    norm_adv_by_std: bool = True
    gamma: float = 1.0
    lam: float = 1.0
    paper: str = ""

    def __post_init__(self) -> None:
        if not (0 < self.clip_ratio_low < 1 and self.clip_ratio_high > 0):
            raise ValueError(f"clip ratios must satisfy 0 < low < 1 and high > 0, got "
                             f"low={self.clip_ratio_low}, high={self.clip_ratio_high}")
        if self.clip_ratio_c <= 1:
            raise ValueError(f"clip_ratio_c (dual clip) must be > 1, got {self.clip_ratio_c}")
        if not (0 <= self.gamma <= 1 and 0 <= self.lam <= 1):
            raise ValueError(f"gamma and lam must lie in [0, 1], got gamma={self.gamma}, lam={self.lam}")

    def with_overrides(self, **overrides: Any) -> AlgorithmSpec:
        """A copy with some fields changed (e.g. from the training config); unknown fields are an error."""
        known = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValueError(f"unknown algorithm fields {unknown}; valid: {sorted(known)}")
        return dataclasses.replace(self, **overrides)


SpecFactory = Callable[[], AlgorithmSpec]
ALGORITHMS: Registry[SpecFactory] = Registry("algorithm")
register_algorithm = ALGORITHMS.register
"""Register a spec factory under ``name``; the spec it returns must carry that name."""


def get_algorithm(name: str, **overrides: Any) -> AlgorithmSpec:
    """The spec registered as ``name``, with ``overrides`` applied."""
    spec = ALGORITHMS.resolve(name)()
    if spec.name != name:
        raise ValueError(f"the factory registered as {name!r} returned a spec named {spec.name!r}")
    return spec.with_overrides(**overrides) if overrides else spec


@register_algorithm("grpo")
def grpo() -> AlgorithmSpec:
    """Group-relative advantages, (r - mean) / std per group; per-sequence mean of token means."""
    return AlgorithmSpec(name="grpo", adv_estimator="grpo", loss_agg_mode="seq-mean-token-mean",
                         paper="https://arxiv.org/abs/2402.03300")


@register_algorithm("rloo")
def rloo() -> AlgorithmSpec:
    """REINFORCE leave-one-out: the baseline of each sample is the mean reward of the rest of its group."""
    return AlgorithmSpec(name="rloo", adv_estimator="rloo", paper="https://arxiv.org/abs/2402.14740")


@register_algorithm("reinforce_pp")
def reinforce_pp() -> AlgorithmSpec:
    """REINFORCE++: discounted token returns whitened over the whole batch (no critic, no groups)."""
    return AlgorithmSpec(name="reinforce_pp", adv_estimator="reinforce_plus_plus",
                         paper="https://arxiv.org/abs/2501.03262")


@register_algorithm("ppo")
def ppo() -> AlgorithmSpec:
    """PPO with a learned value head, GAE advantages and a clipped value loss."""
    return AlgorithmSpec(name="ppo", adv_estimator="gae", needs_critic=True, lam=0.95,
                         paper="https://arxiv.org/abs/1707.06347")


@register_algorithm("dapo")
def dapo() -> AlgorithmSpec:
    """DAPO: GRPO advantages, clip-higher (0.2 / 0.28), dynamic sampling, token-level loss aggregation."""
    return AlgorithmSpec(name="dapo", adv_estimator="grpo", loss_agg_mode="token-mean", clip_ratio_low=0.2,
                         clip_ratio_high=0.28, clip_ratio_c=10.0, dynamic_sampling=True,
                         paper="https://arxiv.org/abs/2503.14476")
