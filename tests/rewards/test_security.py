"""The security reward (ruff's flake8-bandit rules, ``security_cap``) and grpo_secure, the shipped config
that weights it."""

from __future__ import annotations

import pytest

from coding_framework.config import RewardConfig, TrainingConfig, load_config
from coding_framework.grading import Grader
from coding_framework.problems import Problem
from coding_framework.rewards import CompositeReward
from coding_framework.rewards.security import SecurityReward

ADD = Problem(
    task_id="t/add",
    prompt="def add(a, b):\n",
    entry_point="add",
    test_code="assert add(1, 2) == 3\nassert add(-1, 1) == 0\n",
    solutions=["def add(a, b):\n    return a + b\n"],
)
# Every program but WRONG passes the tests; they differ in what flake8-bandit finds.
SECURE = ADD.solutions[0]
ASSERTS = "def add(a, b):\n    assert isinstance(a, int)\n    return a + b\n"  # S101: not a vulnerability
RANDOM = "import random\n\n\ndef add(a, b):\n    return a + b + random.choice([0])\n"  # S311: low severity
EVAL = 'def add(a, b):\n    return eval(f"{a!r} + {b!r}")\n'  # S307: high severity
PICKLE = "import pickle\n\n\ndef add(a, b):\n    return pickle.loads(pickle.dumps(a + b))\n"  # S301: high
WRONG = "def add(a, b):\n    return a - b\n"


def test_insecure_code_is_penalised_and_secure_code_is_not() -> None:
    programs = [SECURE, ASSERTS, RANDOM, EVAL, PICKLE]
    outs = SecurityReward(RewardConfig()).score_batch([(ADD, p) for p in programs])
    assert [o.value for o in outs] == pytest.approx([1.0, 1.0, 0.6, -1.0, -1.0])  # 1 - 2 * 1/5 for one low
    assert [o.details["codes"] for o in outs] == [[], [], ["S311"], ["S307"], ["S301"]]
    assert [o.details["high_severity"] for o in outs] == [[], [], [], ["S307"], ["S301"]]
    strict = SecurityReward(RewardConfig(security_max_issues=1)).score_batch([(ADD, RANDOM)])
    assert strict[0].value == -1.0


@pytest.fixture(scope="module")
def grader():
    with Grader() as g:
        yield g


def test_the_shipped_secure_config_weights_it_into_the_composite(grader: Grader) -> None:
    """`grpo_secure` as the trainer builds its reward (`CompositeReward(config.reward.function)`): the
    security weight moves the composite of passing programs, and the cap holds a high-severity one at 0."""
    function = load_config(TrainingConfig, "grpo_secure").reward.function
    assert (function.weights["security"], function.security_cap) == (0.25, 0.0)
    outs = CompositeReward(function, grader).score_batch([(ADD, p) for p in (SECURE, RANDOM, EVAL, WRONG)])
    assert [o.details["passed"] for o in outs] == [True, True, True, False]
    assert [o.details["security"] for o in outs] == pytest.approx([1.0, 0.6, -1.0, 1.0])
    # (1 * correctness + 0.25 * security) / 1.25, and the capped EVAL at 0 rather than 0.6
    assert [o.value for o in outs] == pytest.approx([1.0, 0.92, 0.0, 0.2])
    assert outs[2].details.get("security_capped") and not outs[1].details.get("security_capped")
    basic = load_config(TrainingConfig, "grpo_basic").reward.function  # the same programs, unweighted
    unweighted = CompositeReward(basic, grader).score_batch([(ADD, EVAL), (ADD, SECURE)])
    assert [o.value for o in unweighted] == [1.0, 1.0]


def test_the_shipped_secure_config_is_grpo_basic_but_for_its_reward() -> None:
    secure, basic = (load_config(TrainingConfig, name).model_dump() for name in ("grpo_secure", "grpo_basic"))
    assert secure["reward"].pop("function") != basic["reward"].pop("function")
    assert secure == basic
