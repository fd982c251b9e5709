from __future__ import annotations

import json

import pytest

from coding_framework.agents.generator import CodeGenerator
from coding_framework.agents.reviewer import StaticReviewer
from tests.fakes.chat import ScriptedChatModel, fenced


async def test_state_round_trips_through_json(add_problem) -> None:
    generator = CodeGenerator(
        chat_model=ScriptedChatModel(answers=[fenced("def add(a, b):\n    return a + b")])
    )
    await generator.adraft(add_problem)
    dumped = json.loads(json.dumps(generator.dump_state()))
    restored = CodeGenerator(chat_model=ScriptedChatModel())
    restored.load_state(dumped)
    assert restored.state == generator.state
    assert restored.state.calls == 1


def test_state_of_another_role_or_mode_is_refused() -> None:
    dumped = StaticReviewer().dump_state()
    with pytest.raises(ValueError, match="role 'reviewer'"):
        CodeGenerator(chat_model=ScriptedChatModel()).load_state(dumped)
    with pytest.raises(ValueError, match="inference"):
        StaticReviewer(mode="training").load_state(dumped)


def test_mode_is_explicit_and_checked() -> None:
    assert StaticReviewer(mode="training").mode == "training"
    with pytest.raises(ValueError, match="mode must be one of"):
        StaticReviewer(mode="serving")  # type: ignore[arg-type]
