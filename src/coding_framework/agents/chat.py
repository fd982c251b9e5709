"""Small helpers for talking to langchain chat models."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage


def message_text(message: BaseMessage) -> str:
    """The text of a chat answer, whether its content is a string or a list of content blocks."""
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(b if isinstance(b, str) else str(b.get("text", "")) for b in content)


def token_usage(message: BaseMessage) -> tuple[int, int]:
    """(prompt, completion) tokens of one call: usage metadata, else the token ids an engine returned."""
    usage: Any = getattr(message, "usage_metadata", None)
    if usage:
        return int(usage.get("input_tokens", 0)), int(usage.get("output_tokens", 0))
    meta = message.response_metadata or {}
    return len(meta.get("prompt_token_ids") or ()), len(meta.get("response_token_ids") or ())
