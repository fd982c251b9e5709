from __future__ import annotations

import pytest

from coding_framework.agents.generator import Attempt, CodeGenerator, code_from_answer, conversation
from coding_framework.llm.base import EngineError
from coding_framework.testing.chat import ScriptedChatModel, fenced, words
from coding_framework.testing.engine import ScriptedEngine


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


async def test_generator_calls_the_model_and_reports_usage(add_problem) -> None:
    answer = fenced("def add(a, b):\n    return a + b")
    generator = CodeGenerator(chat_model=ScriptedChatModel(answers=[answer]))
    draft = await generator.adraft(add_problem)
    assert draft.code == "def add(a, b):\n    return a + b\n"
    assert draft.completion_tokens == words(answer) and draft.prompt_tokens > 0


async def test_an_engine_backend_builds_one_token_exact_session(add_problem) -> None:
    wrong, right = fenced("def add(a, b):\n    return a - b"), fenced("def add(a, b):\n    return a + b")
    engine = ScriptedEngine([wrong, right])
    generator = CodeGenerator(engine=engine)
    first = await generator.adraft(add_problem)
    history = [Attempt(first.text, first.code, "0/3 tests passed.")]
    second = await generator.adraft(add_problem, history, [first.record])

    r1, r2 = first.record, second.record
    assert second.code == "def add(a, b):\n    return a + b\n"
    assert (r1["turn"], r2["turn"], r2["role"]) == (0, 1, "generator")
    # The second prompt continues the first call's exact ids: token-in/token-out, nothing re-tokenized.
    assert (
        r2["prompt_ids"][: len(r1["prompt_ids"]) + len(r1["response_ids"])]
        == r1["prompt_ids"] + r1["response_ids"]
    )
    assert engine.prompts == [r1["prompt_ids"], r2["prompt_ids"]]
    traj = second.trajectory
    assert len(traj["ids"]) == len(traj["loss_mask"]) == len(traj["logprobs"])
    trained = [i for i, m in enumerate(traj["loss_mask"]) if m]
    expected = [
        *range(r1["start"], r1["start"] + len(r1["response_ids"])),
        *range(r2["start"], r2["start"] + len(r2["response_ids"])),
    ]
    assert trained == expected
    assert [traj["ids"][i] for i in trained] == r1["response_ids"] + r2["response_ids"]
    assert [traj["logprobs"][i] for i in trained] == r1["logprobs"] + r2["logprobs"]
    assert second.prompt_tokens == len(r2["prompt_ids"])


async def test_training_replay_refuses_a_changed_history(add_problem) -> None:
    engine = ScriptedEngine([fenced("def add(a, b):\n    return 0")] * 2)
    generator = CodeGenerator(engine=engine)
    first = await generator.adraft(add_problem)
    tampered = {**first.record, "prompt_ids": first.record["prompt_ids"][:-1]}
    with pytest.raises(EngineError, match="session replay diverged"):
        await generator.adraft(add_problem, [Attempt(first.text, first.code, "wrong")], [tampered])


def test_the_generator_needs_exactly_one_backend() -> None:
    with pytest.raises(ValueError, match="exactly one backend"):
        CodeGenerator()
    with pytest.raises(ValueError, match="exactly one backend"):
        CodeGenerator(chat_model=ScriptedChatModel(), engine=ScriptedEngine([]))


async def test_a_given_answer_prefix_is_context_the_model_continues(add_problem) -> None:
    given = "```python\ndef add(a, b):\n"
    engine = ScriptedEngine(["    return a - b\n```", fenced("def add(a, b):\n    return a + b")])
    generator = CodeGenerator(engine=engine)
    problem = add_problem.model_copy(update={"answer_prefix": given})
    first = await generator.adraft(problem)
    record, tokens = first.record, engine.tokenizer(given, add_special_tokens=False)["input_ids"]
    # The prefix closes the prompt (mask 0, never trained); only the continuation is the response.
    assert record["prompt_ids"][-len(tokens):] == tokens and record["text"] == "    return a - b\n```"
    assert first.text == given + record["text"] and first.code == "def add(a, b):\n    return a - b\n"
    trained = [i for i, m in enumerate(first.trajectory["loss_mask"]) if m]
    assert [first.trajectory["ids"][i] for i in trained] == record["response_ids"]
    # A revision replays the first turn with its prefix, token for token, and is not given one itself.
    second = await generator.adraft(problem, [Attempt(first.text, first.code, "0/3 passed")], [record])
    assert second.text == fenced("def add(a, b):\n    return a + b")
    assert second.record["prompt_ids"][: len(record["prompt_ids"])] == record["prompt_ids"]


async def test_a_chat_model_refuses_a_given_prefix(add_problem) -> None:
    generator = CodeGenerator(chat_model=ScriptedChatModel(answers=["x"]))
    with pytest.raises(ValueError, match="answer_prefix"):
        await generator.adraft(add_problem.model_copy(update={"answer_prefix": "```python\n"}))
