"""EngineChatModel: chat-template rendering, token metadata, sync and async, call-time overrides."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from coding_framework.llm.chat_model import EngineChatModel, to_chat_dicts

MESSAGES = [SystemMessage("Be brief."), HumanMessage("Write add(a, b).")]


def test_invoke_returns_tokens_and_logprobs(engine, tiny_tokenizer) -> None:
    model = EngineChatModel(engine=engine, max_new_tokens=10, temperature=1.0, seed=3)
    answer = model.invoke(MESSAGES)
    meta = answer.response_metadata
    rendered = tiny_tokenizer.apply_chat_template(
        to_chat_dicts(MESSAGES), tokenize=False, add_generation_prompt=True
    )
    assert meta["prompt_token_ids"] == tiny_tokenizer(rendered, add_special_tokens=False)["input_ids"]
    assert len(meta["response_token_ids"]) == len(meta["logprobs"]) == 10
    assert tiny_tokenizer.decode(meta["response_token_ids"], skip_special_tokens=True) == answer.content
    assert meta["stop_reason"] == "length" and meta["policy_version"] == "v0"
    direct = engine.generate(meta["prompt_token_ids"], model._prepare(MESSAGES, None, {})[1])
    assert direct.token_ids == meta["response_token_ids"]


async def test_ainvoke_matches_invoke(engine) -> None:
    model = EngineChatModel(engine=engine, max_new_tokens=8, temperature=0.0)
    sync = model.invoke(MESSAGES)
    async_ = await model.ainvoke(MESSAGES)
    assert async_.response_metadata["response_token_ids"] == sync.response_metadata["response_token_ids"]


def test_call_time_overrides_and_stop(engine) -> None:
    model = EngineChatModel(engine=engine, max_new_tokens=30, temperature=0.0)
    assert len(model.invoke(MESSAGES, max_new_tokens=3).response_metadata["response_token_ids"]) == 3
    full = model.invoke(MESSAGES).content
    stop = full[4:6]
    stopped = model.invoke(MESSAGES, stop=[stop])
    assert stopped.response_metadata["stop_reason"] == "stop"
    with pytest.raises(TypeError, match="unknown generation arguments"):
        model.invoke(MESSAGES, beam_width=4)


def test_conversation_with_ai_turns_renders_all_roles() -> None:
    dicts = to_chat_dicts(
        [*MESSAGES, AIMessage("def add(a, b): ..."), HumanMessage([{"type": "text", "text": "again"}])]
    )
    assert [d["role"] for d in dicts] == ["system", "user", "assistant", "user"]
    assert dicts[-1]["content"] == "again"
