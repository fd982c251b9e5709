"""Scripted episodes shared by the training tests (part A: trajectories, interop, auditor)."""

from __future__ import annotations

from coding_framework.llm.base import SamplingParams
from coding_framework.llm.session import TokenSession
from coding_framework.problems import Problem
from coding_framework.problems.prompts import generation_messages, revision_messages
from coding_framework.testing.chat import fenced
from coding_framework.testing.engine import ScriptedEngine

WRONG = fenced("def add(a, b):\n    return a - b")
RIGHT = fenced("def add(a, b):\n    return a + b")

ADD = Problem(
    task_id="t/add", prompt="Write a function add(a, b) that returns a + b.", entry_point="add",
    test_code="assert add(1, 2) == 3\nassert add(-1, 1) == 0\nassert add(2, 2) == 4\n", prompt_is_code=False,
)


def two_turn_session(engine: ScriptedEngine | None = None, problem: Problem = ADD,
                     feedback: str = "tests failed") -> TokenSession:
    """Generator draft, Executor feedback, Generator revision: one session, never re-tokenized."""
    engine = engine or ScriptedEngine([WRONG, RIGHT])
    session = TokenSession(engine.tokenizer)
    session.add_messages(generation_messages(problem))
    session.generate(engine, SamplingParams(), role="generator")
    session.add_messages(revision_messages(problem, "", feedback))
    session.generate(engine, SamplingParams(), role="generator")
    return session
