from __future__ import annotations

from coding_framework.agents.generator import Attempt, CodeGenerator, code_from_answer, conversation
from tests.fakes.chat import ScriptedChatModel, fenced, words


def test_fenced_full_function_is_taken(add_problem) -> None:
    text = fenced("def add(a, b):\n    return a + b") + "\nExample: add(1, 2)"
    assert code_from_answer(add_problem, text) == "def add(a, b):\n    return a + b\n"


def test_body_only_answer_falls_back_to_the_signature(stub_problem) -> None:
    code = code_from_answer(stub_problem, "    return [x * 2 for x in xs]\n")
    assert code == stub_problem.prompt + "    return [x * 2 for x in xs]\n"
    fenced_body = code_from_answer(stub_problem, "```python\n    return [x * 2 for x in xs]\n```")
    assert fenced_body == code


def test_prose_without_code_gives_empty_code(add_problem) -> None:
    assert code_from_answer(add_problem, "I am not sure how to do that.") == ""


def test_conversation_replays_attempts_and_feedback(add_problem) -> None:
    history = [Attempt(text="first answer", code="def add(a, b): return 0", feedback="0/3 tests passed.")]
    messages = conversation(add_problem, history)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[2]["content"] == "first answer"
    assert "0/3 tests passed." in messages[3]["content"]


async def test_generator_calls_the_model_and_tracks_usage(add_problem) -> None:
    answer = fenced("def add(a, b):\n    return a + b")
    generator = CodeGenerator(ScriptedChatModel(answers=[answer]))
    draft = await generator.adraft(add_problem)
    assert draft.code == "def add(a, b):\n    return a + b\n"
    assert draft.completion_tokens == words(answer) and draft.prompt_tokens > 0
    assert generator.state.calls == 1
    assert generator.state.completion_tokens == words(answer)
