"""How a model writes a tool call, and how its answer is read back.

Two formats. ``hermes``, the tool format of chat templates that have one (Qwen, Hermes and SmolLM3 use it):
``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, observations in ``<tool_response>``. ``json``,
for templates without one (SmolLM2, the embedded model): the same JSON object in a fenced block,

    ```tool
    {"name": "read_file", "arguments": {"path": "pkg/module.py"}}
    ```

An answer is read for its first call. One that holds no call, or a call that is not a JSON object with a
string ``name`` and an object ``arguments``, is a parse failure: the model is told what went wrong in an
observation, the failure is counted, and the episode goes on.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from coding_framework.workspace import ToolCall, ToolSpec

ToolFormat = Literal["json", "hermes"]

_BLOCKS = {
    "hermes": re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S),
    # A ```tool or ```json block, or a bare fence holding an object; a ```python block's closing fence
    # followed by prose is not a call.
    "json": re.compile(r"```(?:tool|json)[ \t]*\n(.*?)(?:```|$)|```[ \t]*\n(\{.*?)(?:```|$)", re.S),
}


class ToolCallParseError(ValueError):
    """An answer without a usable tool call; the message is what the model is told."""


def format_for(tokenizer: Any) -> ToolFormat:
    """``hermes`` when the tokenizer's chat template renders tool calls that way, else ``json``."""
    template = getattr(tokenizer, "chat_template", None) or ""
    return "hermes" if isinstance(template, str) and "<tool_call>" in template else "json"


def parse_tool_call(text: str, fmt: ToolFormat) -> ToolCall:
    """The first tool call in ``text``; ToolCallParseError when there is none usable."""
    match = _BLOCKS[fmt].search(text)
    if match is None:
        raise ToolCallParseError(f"no tool call found; write one as {example(fmt)}")
    body = next(group for group in match.groups() if group is not None).strip()
    try:
        call = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ToolCallParseError(
            f"the tool call is not valid JSON ({exc.msg} at character {exc.pos})"
        ) from None
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        raise ToolCallParseError(
            'a tool call is a JSON object with a string "name" and an object "arguments"'
        )
    arguments = call.get("arguments", {})
    if isinstance(arguments, str):  # some models double-encode the arguments
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            raise ToolCallParseError('"arguments" must be a JSON object') from None
    if not isinstance(arguments, dict):
        raise ToolCallParseError('"arguments" must be a JSON object')
    return ToolCall(call["name"], arguments)


def example(fmt: ToolFormat) -> str:
    call = '{"name": "read_file", "arguments": {"path": "pkg/module.py"}}'
    return f"<tool_call>{call}</tool_call>" if fmt == "hermes" else f"```tool\n{call}\n```"


def render_call(call: ToolCall, fmt: ToolFormat) -> str:
    """How a call is written in ``fmt`` (scripted policies and tests write answers this way)."""
    body = json.dumps({"name": call.name, "arguments": call.arguments})
    return f"<tool_call>\n{body}\n</tool_call>" if fmt == "hermes" else f"```tool\n{body}\n```"


def render_observation(tool: str, text: str, fmt: ToolFormat) -> str:
    if fmt == "hermes":
        return f"<tool_response>\n{text}\n</tool_response>"
    return f"[{tool}]\n{text}"


def tools_prompt(specs: list[ToolSpec], fmt: ToolFormat) -> str:
    """The system prompt's description of the tools and the call format."""
    if fmt == "hermes":
        listing = "\n".join(json.dumps({"type": "function", "function": s.schema()}) for s in specs)
        return (f"You may call one tool per turn. The tools:\n<tools>\n{listing}\n</tools>\n"
                f"Call a tool as {example(fmt)}")
    listing = "\n".join(f"- {s.name}({_signature(s)}): {s.description}" for s in specs)
    return f"Call exactly one tool per turn, as a fenced block:\n{example(fmt)}\nThe tools:\n{listing}"


def _signature(spec: ToolSpec) -> str:
    schema = spec.schema()["parameters"]
    required = set(schema.get("required", []))
    return ", ".join(p if p in required else f"{p}?" for p in schema.get("properties", {}))


@dataclass(frozen=True)
class ParsedTurn:
    """One model answer as read: the call, or the parse error the model is told about."""

    call: ToolCall | None
    error: str | None


def read_turn(text: str, fmt: ToolFormat) -> ParsedTurn:
    try:
        return ParsedTurn(parse_tool_call(text, fmt), None)
    except ToolCallParseError as exc:
        return ParsedTurn(None, str(exc))


__all__ = [
    "ParsedTurn", "ToolCallParseError", "ToolFormat", "example", "format_for", "parse_tool_call", "read_turn",
    "render_call", "render_observation", "tools_prompt",
]
