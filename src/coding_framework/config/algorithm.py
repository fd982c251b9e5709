"""Which RL algorithm a run uses and which fields of its spec the config replaces, checked when it loads.

The algorithms themselves (verl estimator, policy loss, clip range, critic, ...) are the specs in
``training.algos.algorithms``'s registry, the one place that defines them. This layer cannot import it,
so it holds the two things a config names: the registered algorithms (``AlgorithmName``) and the spec's
fields (``AlgorithmOverrides``). ``tests/config/test_training_config.py`` pins both to the registry and
to ``AlgorithmSpec``, so neither can drift from it.

Adding an algorithm touches two files: register its spec factory in ``training/algos/algorithms.py``
and add its name to ``AlgorithmName`` here (the pin test names whichever is missing). Nothing else lists the
names: ``TrainingConfig.algorithm``'s description and load errors are built from ``ALGORITHM_NAMES``.
Adding a field to ``AlgorithmSpec`` adds it here too, with its type and ``None`` for "keep the spec's".
An algorithm registered at runtime (``register_algorithm`` in a notebook) is usable through
``get_algorithm``, not through a ``TrainingConfig``.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field, model_validator

from coding_framework.config.loader import StrictModel

__all__ = ["ALGORITHM_NAMES", "AlgorithmName", "AlgorithmOverrides", "LossAggMode"]

AlgorithmName = Literal["grpo", "ppo", "rloo", "reinforce_pp", "dapo"]
ALGORITHM_NAMES: tuple[str, ...] = get_args(AlgorithmName)

LossAggMode = Literal[
    "token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"
]


class AlgorithmOverrides(StrictModel):
    """Fields of the algorithm's registered ``AlgorithmSpec`` to replace; null (the default) keeps the
    spec's value. Their meaning is documented on ``AlgorithmSpec``; the spec checks the values (e.g.
    ``0 < clip_ratio_low < 1``) when the trainer builds it. YAML: ``algo.overrides: {lam: 0.95}``."""

    adv_estimator: str | None = Field(None, description="A verl advantage estimator name.")
    policy_loss: str | None = Field(None, description="A verl policy loss name (`vanilla`: PPO clip).")
    loss_agg_mode: LossAggMode | None = Field(None, description="How token losses reduce to a scalar.")
    clip_ratio_low: float | None = Field(None, description="The ratio is clipped below at `1 - low`.")
    clip_ratio_high: float | None = Field(None, description="The ratio is clipped above at `1 + high`.")
    clip_ratio_c: float | None = Field(None, description="Dual-clip bound for negative advantages.")
    needs_critic: bool | None = Field(None, description="Train a value head and feed it to the estimator.")
    cliprange_value: float | None = Field(None, description="Value-loss clip range (critic only).")
    dynamic_sampling: bool | None = Field(None, description="Drop groups whose rewards are all equal.")
    norm_adv_by_std: bool | None = Field(None, description="GRPO divides by the group's reward std.")
    gamma: float | None = Field(None, description="Discount.")
    lam: float | None = Field(None, description="GAE lambda.")

    @model_validator(mode="before")
    @classmethod
    def _known_fields(cls, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(cls.model_fields))
            if unknown:
                raise ValueError(f"unknown algorithm fields {unknown}; valid: {sorted(cls.model_fields)}")
        return data

    def replaced(self) -> dict[str, Any]:
        """The fields set here, as keywords for ``get_algorithm(name, **overrides.replaced())``."""
        return self.model_dump(exclude_none=True)
