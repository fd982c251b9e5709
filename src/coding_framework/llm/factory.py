"""Build a TokenEngine or a LangChain chat model from an ``LLMConfig`` (or a spec string)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from langchain_core.language_models import BaseChatModel

from coding_framework.config.embedded import EmbeddedModelConfig
from coding_framework.config.llm import LLMConfig
from coding_framework.llm.base import EngineError, TokenEngine
from coding_framework.llm.chat_model import EngineChatModel


def resolve_model_dir(model: str, embedded: EmbeddedModelConfig) -> Path:
    """``embedded`` is the bootstrapped default model (built on first use); anything else a directory."""
    if model == "embedded":
        from coding_framework.embedded import ensure_embedded_model

        return ensure_embedded_model(embedded)
    path = Path(model).expanduser()
    if not path.is_dir():
        raise EngineError(f"model directory {path} does not exist (use 'embedded' for the default model)")
    return path


def _local(config: LLMConfig) -> TokenEngine:
    from coding_framework.llm.local import LocalEngine

    path = resolve_model_dir(config.model, config.embedded)
    return LocalEngine.from_pretrained(
        path, device=config.device, dtype=config.dtype, max_batch_size=config.max_batch_size
    )


def _openai(config: LLMConfig) -> TokenEngine:
    from coding_framework.llm.openai_compat import OpenAICompatibleEngine

    tokenizer_dir = resolve_model_dir(config.tokenizer, config.embedded)
    assert config.base_url is not None  # LLMConfig rejects backend "openai" without base_url
    return OpenAICompatibleEngine(
        base_url=config.base_url,
        model=config.model,
        tokenizer_path=str(tokenizer_dir),
        api_key=config.api_key or os.environ.get("OPENAI_API_KEY"),
        timeout_s=config.timeout_s,
        max_retries=config.max_retries,
    )


_BACKENDS: dict[str, Callable[[LLMConfig], TokenEngine]] = {"local": _local, "openai": _openai}


def build_engine(config: LLMConfig | str) -> TokenEngine:
    """The engine ``config`` names; a string is parsed as a spec (``LLMConfig.from_spec``)."""
    if isinstance(config, str):
        config = LLMConfig.from_spec(config)
    try:
        builder = _BACKENDS[config.backend]
    except KeyError:
        raise EngineError(f"unknown backend {config.backend!r}; choose one of {sorted(_BACKENDS)}") from None
    return builder(config)


def build_chat_model(
    config: LLMConfig | str, engine: TokenEngine | None = None, role: str | None = None
) -> BaseChatModel:
    """A chat model over ``engine`` (built from ``config`` if not given) with its sampling defaults; its
    calls carry ``role`` (which adapter an engine with per-role adapters uses)."""
    if isinstance(config, str):
        config = LLMConfig.from_spec(config)
    s = config.sampling
    return EngineChatModel(
        engine=engine if engine is not None else build_engine(config),
        max_new_tokens=s.max_new_tokens,
        temperature=s.temperature,
        top_p=s.top_p,
        seed=s.seed,
        stop=list(s.stop),
        role=role,
    )
