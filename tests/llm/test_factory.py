"""LLM spec parsing, LLMConfig validation and engine / chat-model construction."""

from __future__ import annotations

import pytest

from coding_framework.config import ConfigError
from coding_framework.config.llm import LLMConfig, parse_llm_spec
from coding_framework.llm.base import EngineError, SamplingParams
from coding_framework.llm.chat_model import EngineChatModel
from coding_framework.llm.factory import build_chat_model, build_engine
from coding_framework.llm.local import LocalEngine


@pytest.mark.parametrize(
    "spec,fields",
    [
        ("embedded", {"backend": "local", "model": "embedded"}),
        ("local:/models/qwen", {"backend": "local", "model": "/models/qwen"}),
        (
            "openai:http://localhost:8000/v1@my-model",
            {"backend": "openai", "base_url": "http://localhost:8000/v1", "model": "my-model"},
        ),
        (
            "openai:https://user@host/v1@org/model",
            {"backend": "openai", "base_url": "https://user@host/v1", "model": "org/model"},
        ),
    ],
)
def test_parse_spec(spec: str, fields: dict) -> None:
    assert parse_llm_spec(spec) == fields


@pytest.mark.parametrize(
    "spec,match",
    [
        ("gpt4", "unrecognised"),
        ("local:", "unrecognised"),
        ("openai:http://localhost:8000/v1", "after '@'"),
        ("openai:localhost:8000@m", "http"),
    ],
)
def test_bad_specs(spec: str, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        parse_llm_spec(spec)


def test_from_spec_keeps_overrides() -> None:
    cfg = LLMConfig.from_spec("openai:http://h:1/v1@m", timeout_s=5, sampling={"temperature": 0.7})
    assert (cfg.backend, cfg.base_url, cfg.model, cfg.timeout_s, cfg.sampling.temperature) == (
        "openai",
        "http://h:1/v1",
        "m",
        5,
        0.7,
    )


def test_openai_needs_base_url() -> None:
    with pytest.raises(ValueError, match="base_url"):
        LLMConfig(backend="openai", model="m")


@pytest.fixture
def model_dir(tmp_path, tiny_model, tiny_tokenizer):
    tiny_model.save_pretrained(tmp_path)
    tiny_tokenizer.save_pretrained(tmp_path)
    return tmp_path


def test_build_local_engine(model_dir) -> None:
    engine = build_engine(f"local:{model_dir}")
    assert isinstance(engine, LocalEngine)
    assert len(engine.generate([5, 6, 7], SamplingParams(max_new_tokens=4, temperature=0.0)).token_ids) == 4


def test_build_local_engine_missing_dir(tmp_path) -> None:
    with pytest.raises(EngineError, match="does not exist"):
        build_engine(f"local:{tmp_path / 'nope'}")


def test_build_chat_model_uses_sampling_defaults(model_dir) -> None:
    cfg = LLMConfig.from_spec(f"local:{model_dir}", sampling={"max_new_tokens": 5, "temperature": 0.0})
    chat = build_chat_model(cfg)
    assert isinstance(chat, EngineChatModel)
    assert len(chat.invoke("hi").response_metadata["response_token_ids"]) == 5


def test_build_openai_engine(model_dir) -> None:
    compat = pytest.importorskip("coding_framework.llm.openai_compat")
    cfg = LLMConfig.from_spec("openai:http://127.0.0.1:9/v1@tiny", tokenizer=str(model_dir), max_retries=0)
    engine = build_engine(cfg)
    assert isinstance(engine, compat.OpenAICompatibleEngine)
