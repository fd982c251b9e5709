"""The one engine builder: local engines (with a directory's role adapters), endpoints, chat models."""

from __future__ import annotations

import pytest

from coding_framework.config.llm import LLMConfig
from coding_framework.llm.base import EngineError, SamplingParams
from coding_framework.llm.chat_model import EngineChatModel
from coding_framework.llm.factory import build_chat_model, build_engine
from coding_framework.llm.local import LocalEngine


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
    with pytest.raises(EngineError, match="no such model directory"):
        build_engine(f"local:{tmp_path / 'nope'}")


def test_build_chat_model_uses_sampling_defaults(model_dir) -> None:
    cfg = LLMConfig.from_spec(f"local:{model_dir}", sampling={"max_new_tokens": 5, "temperature": 0.0})
    chat = build_chat_model(cfg)
    assert isinstance(chat, EngineChatModel)
    assert len(chat.invoke("hi").response_metadata["response_token_ids"]) == 5


def test_build_openai_engine(model_dir) -> None:
    compat = pytest.importorskip("coding_framework.llm.openai_compat")
    cfg = LLMConfig.from_spec("openai:http://127.0.0.1:9/v1@tiny", tokenizer=f"local:{model_dir}",
                              max_retries=0)
    engine = build_engine(cfg)
    assert isinstance(engine, compat.OpenAICompatibleEngine)


def test_a_vllm_server_takes_the_models_context_unless_told(model_dir) -> None:
    """A prompt longer than the server's max_model_len is refused outright: the default is the model's own
    context (MBPP has 3.7k-token prompts, beyond vLLM's 2,048), at most 8,192; a setting wins."""
    import json

    from coding_framework.llm.factory import vllm_server_for
    from coding_framework.models import resolve_model

    config = json.loads((model_dir / "config.json").read_text())
    for positions, expected in ((4096, 4096), (131072, 8192)):
        (model_dir / "config.json").write_text(json.dumps({**config, "max_position_embeddings": positions}))
        assert vllm_server_for(resolve_model(str(model_dir))).config.max_model_len == expected
    told = vllm_server_for(resolve_model(str(model_dir)), {"max_model_len": 1024})
    assert told.config.max_model_len == 1024
