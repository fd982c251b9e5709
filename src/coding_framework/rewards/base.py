"""The interface every reward shares (score a batch of (problem, program) pairs into [-1, 1]); the registry.

Registry: ``REWARDS`` (a dict), ``register_reward`` (a class decorator) and ``get_reward`` (the getter, whose
error lists the valid names), like ``training.algos.algorithms``. ``CompositeReward`` builds its parts from
it by the names in ``RewardConfig.weights``, so a new reward is one module in this package that registers
itself.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from coding_framework.config.loader import ConfigError
from coding_framework.config.rewards import RewardConfig
from coding_framework.grading import ExecutionResult, Grader
from coding_framework.problems.problem import Problem
from coding_framework.registry import Registry

Item = tuple[Problem, str]


class RewardOutput(BaseModel):
    value: float = Field(description="Normalized reward, clipped to [-clip, clip].")
    raw: float = Field(
        description="The measurement before normalization (pass fraction, lint count, ratio...)."
    )
    details: dict[str, Any] = Field(default_factory=dict)


def clip(value: float, bound: float) -> float:
    return max(-bound, min(bound, value))


class BaseRewardFunction(ABC):
    """A reward over complete programs. ``score_batch`` runs the batch concurrently.

    Rewards that need execution take precomputed ``results`` so a composite runs each program once.
    """

    name: str = "reward"
    needs_execution: bool = True

    def __init__(self, config: RewardConfig | None = None, grader: Grader | None = None) -> None:
        self.config = config or RewardConfig()
        self._grader = grader

    @property
    def grader(self) -> Grader:
        if self._grader is None:
            self._grader = Grader()
        return self._grader

    def execute(self, items: Sequence[Item]) -> list[ExecutionResult]:
        return self.grader.grade_many(list(items))

    @abstractmethod
    def score_batch(
        self, items: Sequence[Item], results: Sequence[ExecutionResult] | None = None
    ) -> list[RewardOutput]:
        """Score ``items``; ``results[i]`` (if given) is the grader's result for ``items[i]``."""

    def score(self, problem: Problem, program: str, result: ExecutionResult | None = None) -> RewardOutput:
        return self.score_batch([(problem, program)], None if result is None else [result])[0]

    def __call__(self, items: Sequence[Item]) -> list[float]:
        """TRL-style: plain floats for a batch."""
        return [out.value for out in self.score_batch(items)]

    async def ascore_batch(
        self, items: Sequence[Item], results: Sequence[ExecutionResult] | None = None
    ) -> list[RewardOutput]:
        if results is None and self.needs_execution:
            results = await asyncio.gather(*(self.grader.agrade(p, prog) for p, prog in items))
        return await asyncio.to_thread(self.score_batch, items, results)


R = TypeVar("R", bound=type[BaseRewardFunction])
REWARDS: Registry[type[BaseRewardFunction]] = Registry("reward", miss=ConfigError)


def register_reward(name: str) -> Callable[[R], R]:
    """Register a reward class under ``name``: its ``name`` attribute and its key in ``RewardConfig.weights``.

    The class is built as ``cls(config, grader)``.
    """

    def decorator(reward: R) -> R:
        REWARDS.add(name, reward)
        reward.name = name
        return reward

    return decorator


def get_reward(name: str) -> type[BaseRewardFunction]:
    """The reward class registered as ``name``; the error lists the valid names."""
    return REWARDS.resolve(name)
