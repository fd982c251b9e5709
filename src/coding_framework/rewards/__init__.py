"""Reward functions over graded programs, shared by the RL trainer and the evaluation tools.

Every module of this package is imported below, so a reward module registers itself (``register_reward``)
just by being here: adding a reward is one file, then a weight for its name in ``RewardConfig.weights``.
"""

import importlib
import pkgutil

from coding_framework.rewards.base import (
    REWARDS,
    BaseRewardFunction,
    RewardOutput,
    get_reward,
    register_reward,
)
from coding_framework.rewards.composite import CompositeReward
from coding_framework.rewards.correctness import CorrectnessReward
from coding_framework.rewards.efficiency import EfficiencyReward
from coding_framework.rewards.style import StyleReward, lint

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = [
    "REWARDS",
    "BaseRewardFunction",
    "CompositeReward",
    "CorrectnessReward",
    "EfficiencyReward",
    "RewardOutput",
    "StyleReward",
    "get_reward",
    "lint",
    "register_reward",
]
