"""Request parsing on the hot path: plain dict checks (no pydantic round trip), every failure a 400.

Fields a backend does not know are kept in ``raw`` and passed on to OpenAI-compatible upstreams.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from coding_framework.config.serving import LimitsConfig
from coding_framework.serving.errors import bad_request

ROLES = frozenset({"system", "user", "assistant", "tool", "developer"})


@dataclass
class ChatRequest:
    messages: list[dict[str, str]]
    model: str | None
    stream: bool
    max_tokens: int | None
    temperature: float | None
    top_p: float | None
    stop: list[str]
    seed: int | None
    session: str | None
    include_usage: bool
    raw: dict[str, Any] = field(repr=False)
    # The agent role the call is made as (``serving.roles``): picks the version's adapter for that role.
    role: str | None = None

    @property
    def prompt_chars(self) -> int:
        return sum(len(m["content"]) for m in self.messages)


def _text(content: Any, i: int) -> str:
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "text" for p in content):
        return "".join(str(p.get("text", "")) for p in content)
    raise bad_request(f"messages[{i}].content must be a string or a list of text parts", "messages")


def _messages(value: Any) -> list[dict[str, str]]:
    if not isinstance(value, list) or not value:
        raise bad_request("messages must be a non-empty list of {role, content} objects", "messages")
    out = []
    for i, m in enumerate(value):
        if not isinstance(m, dict) or m.get("role") not in ROLES:
            raise bad_request(f"messages[{i}] needs a role, one of {sorted(ROLES)}", "messages")
        role = "system" if m["role"] == "developer" else m["role"]
        out.append({"role": role, "content": _text(m.get("content"), i)})
    return out


def _number(body: dict[str, Any], key: str, low: float, high: float) -> float | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise bad_request(f"{key} must be a number in [{low}, {high}], got {value!r}", key)
    return float(value)


def _int(body: dict[str, Any], key: str, low: int, high: int) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise bad_request(f"{key} must be an integer in [{low}, {high}], got {value!r}", key)
    return value


def _stop(value: Any) -> list[str]:
    if value is None:
        return []
    stops = [value] if isinstance(value, str) else value
    if not isinstance(stops, list) or len(stops) > 4 or not all(isinstance(s, str) and s for s in stops):
        raise bad_request("stop must be a non-empty string or a list of at most 4 of them", "stop")
    return stops


def _optional_str(body: dict[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value is not None and not isinstance(value, str):
        raise bad_request(f"{key} must be a string", key)
    return value


def session_of(body: dict[str, Any], headers: Any) -> str | None:
    """``session_id``, ``user``, ``metadata.thread_id`` (LangGraph), or an x-session-id header."""
    for key in ("session_id", "user"):
        value = _optional_str(body, key)
        if value:
            return value
    meta = body.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("thread_id"), str):
        return str(meta["thread_id"])
    return headers.get("x-session-id") or headers.get("x-thread-id")


def parse_chat(body: Any, headers: Any, limits: LimitsConfig) -> ChatRequest:
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    messages = _messages(body.get("messages"))
    _int(body, "n", 1, 1)  # one choice per request
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise bad_request("stream must be a boolean", "stream")
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise bad_request("stream_options must be an object", "stream_options")
    key = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    request = ChatRequest(
        messages=messages,
        model=_optional_str(body, "model"),
        stream=stream,
        max_tokens=_int(body, key, 1, limits.max_tokens),
        temperature=_number(body, "temperature", 0.0, 2.0),
        top_p=_number(body, "top_p", 1e-9, 1.0),
        stop=_stop(body.get("stop")),
        seed=_int(body, "seed", -(2**63), 2**63 - 1),
        session=session_of(body, headers),
        include_usage=bool((options or {}).get("include_usage")),
        raw=body,
        role=_optional_str(body, "role"),
    )
    if request.prompt_chars > limits.max_prompt_chars:
        raise bad_request(
            f"the messages hold {request.prompt_chars} characters; the limit is {limits.max_prompt_chars}",
            "messages",
            "context_length_exceeded",
        )
    return request


@dataclass(frozen=True)
class SolveRequest:
    prompt: str
    entry_point: str | None
    tests: str | None
    session: str | None
    max_rounds: int


def parse_solve(body: Any, headers: Any, limits: LimitsConfig, default_rounds: int) -> SolveRequest:
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    unknown = set(body) - {"prompt", "entry_point", "tests", "session_id", "max_rounds", "model"}
    if unknown:
        raise bad_request(f"unknown fields {sorted(unknown)}", sorted(unknown)[0])
    prompt = body.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise bad_request("prompt must be a non-empty string", "prompt")
    if len(prompt) > limits.max_prompt_chars:
        raise bad_request(
            f"prompt holds {len(prompt)} characters; the limit is {limits.max_prompt_chars}",
            "prompt",
            "context_length_exceeded",
        )
    entry = _optional_str(body, "entry_point")
    if entry is not None and not entry.isidentifier():
        raise bad_request(f"entry_point must be a Python identifier, got {entry!r}", "entry_point")
    tests = _optional_str(body, "tests")
    if tests is not None and len(tests) > limits.max_tests_chars:
        raise bad_request(f"tests hold more than {limits.max_tests_chars} characters", "tests")
    rounds = _int(body, "max_rounds", 1, limits.max_rounds)
    return SolveRequest(
        prompt=prompt,
        entry_point=entry,
        tests=tests if tests and tests.strip() else None,
        session=_optional_str(body, "session_id") or headers.get("x-session-id"),
        max_rounds=rounds or default_rounds,
    )


def completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex[:24]}"


def now() -> int:
    return int(time.time())
