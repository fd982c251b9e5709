"""Reward functions over graded programs, shared by the RL trainer and the evaluation tools."""

from coding_framework.rewards.base import BaseRewardFunction, RewardOutput
from coding_framework.rewards.composite import CompositeReward
from coding_framework.rewards.correctness import CorrectnessReward
from coding_framework.rewards.efficiency import EfficiencyReward
from coding_framework.rewards.style import StyleReward, lint

__all__ = [
    "BaseRewardFunction",
    "CompositeReward",
    "CorrectnessReward",
    "EfficiencyReward",
    "RewardOutput",
    "StyleReward",
    "lint",
]
