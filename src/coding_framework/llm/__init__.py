"""LLM backends behind one token-level interface (``TokenEngine``), chat models over it, and sessions.

Importing this package does not import torch: the in-process engine lives in
``coding_framework.llm.local`` (``LocalEngine``) and the OpenAI-compatible client in
``coding_framework.llm.openai_compat``; ``build_engine`` picks one from an ``LLMConfig`` or spec string.
"""

from coding_framework.llm.base import (
    BatchRequestsFailed,
    EngineError,
    FinishReason,
    Generation,
    RequestFailed,
    SamplingParams,
    TokenEngine,
)
from coding_framework.llm.chat_model import EngineChatModel
from coding_framework.llm.factory import build_chat_model, build_engine
from coding_framework.llm.session import CallRecord, TemplateError, TokenSession

__all__ = [
    "BatchRequestsFailed",
    "CallRecord",
    "EngineChatModel",
    "EngineError",
    "FinishReason",
    "Generation",
    "RequestFailed",
    "SamplingParams",
    "TemplateError",
    "TokenEngine",
    "TokenSession",
    "build_chat_model",
    "build_engine",
]
