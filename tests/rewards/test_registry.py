"""The reward registry: rewards register themselves, the composite builds its parts from it by weight name."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Sequence

import pytest

from coding_framework.config import ConfigError, RewardConfig
from coding_framework.grading import ExecutionResult
from coding_framework.problems import Problem
from coding_framework.rewards import (
    REWARDS,
    BaseRewardFunction,
    CompositeReward,
    CorrectnessReward,
    EfficiencyReward,
    StyleReward,
    get_reward,
    register_reward,
)
from coding_framework.rewards.base import Item, RewardOutput
from coding_framework.testing.grader import InProcessGrader

ADD = Problem(
    task_id="t/add", prompt="Write add(a, b).", entry_point="add", prompt_is_code=False,
    test_code="assert add(1, 2) == 3\n",
)
RIGHT = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a - b\n"


class Brevity(BaseRewardFunction):
    """1 for a program of at most two lines, else -1."""

    needs_execution = False

    def score_batch(
        self, items: Sequence[Item], results: Sequence[ExecutionResult] | None = None
    ) -> list[RewardOutput]:
        raws = [float(len(program.splitlines())) for _, program in items]
        return [RewardOutput(value=1.0 if raw <= 2 else -1.0, raw=raw) for raw in raws]


@pytest.fixture
def brevity() -> Iterator[type[Brevity]]:
    register_reward("brevity")(Brevity)
    yield Brevity
    del REWARDS["brevity"]


def test_the_shipped_rewards_are_registered_under_their_names() -> None:
    shipped = {"correctness": CorrectnessReward, "style": StyleReward, "efficiency": EfficiencyReward}
    assert shipped.items() <= REWARDS.items()
    assert [REWARDS[n].name for n in ("correctness", "style", "efficiency")] == [
        "correctness", "style", "efficiency",
    ]
    assert get_reward("style") is StyleReward


def test_a_duplicate_name_is_rejected() -> None:
    with pytest.raises(ValueError, match="reward 'correctness' is already registered"):
        register_reward("correctness")(Brevity)
    assert REWARDS["correctness"] is CorrectnessReward
    assert register_reward("correctness")(CorrectnessReward) is CorrectnessReward  # the same class: no-op


def test_an_unknown_name_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown reward 'nope'; valid rewards: \['correctness', "):
        get_reward("nope")


def test_a_registered_reward_joins_the_composite_by_its_weight(brevity: type[Brevity]) -> None:
    config = RewardConfig(weights={"correctness": 1.0, "style": 0.0, "efficiency": 0.0, "brevity": 1.0})
    reward = CompositeReward(config, grader=InProcessGrader())
    assert isinstance(reward.parts["brevity"], brevity) and brevity.name == "brevity"
    right, wrong, long = reward.score_batch([(ADD, RIGHT), (ADD, WRONG), (ADD, RIGHT + "\n# a comment\n")])
    assert (right.value, wrong.value, long.value) == (1.0, 0.5, 0.0)
    assert right.details == {"correctness": 1.0, "brevity": 1.0, "passed": True}


def test_weights_keep_their_defaults_and_the_defaults_order() -> None:
    assert list(RewardConfig().weights.items()) == [("correctness", 0.7), ("style", 0.2), ("efficiency", 0.1)]
    reordered = RewardConfig(weights={"brevity": 1.0, "efficiency": 0.0, "correctness": 1.0})
    assert list(reordered.weights.items()) == [
        ("correctness", 1.0), ("style", 0.2), ("efficiency", 0.0), ("brevity", 1.0),
    ]


def test_a_module_in_the_package_registers_without_any_other_edit(tmp_path) -> None:
    (tmp_path / "shortness.py").write_text(
        "from coding_framework.rewards.base import register_reward\n"
        "from coding_framework.rewards.correctness import CorrectnessReward\n\n\n"
        "@register_reward('shortness')\n"
        "class ShortnessReward(CorrectnessReward):\n"
        "    pass\n"
    )
    script = (  # a fresh interpreter imports the package with tmp_path as one more of its folders
        "import importlib.util, sys\n"
        "spec = importlib.util.find_spec('coding_framework.rewards')\n"
        f"spec.submodule_search_locations.append({str(tmp_path)!r})\n"
        "rewards = sys.modules[spec.name] = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(rewards)\n"
        "from coding_framework.config import RewardConfig\n"
        "parts = rewards.CompositeReward(RewardConfig(weights={'shortness': 1.0})).parts\n"
        "print(type(parts['shortness']).__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ShortnessReward"
