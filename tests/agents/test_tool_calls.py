"""Reading tool calls from model answers, in the json block and hermes formats."""

from __future__ import annotations

import pytest

from coding_framework.agents.tool_calls import (
    ToolCallParseError,
    format_for,
    parse_tool_call,
    read_turn,
    render_call,
    tools_prompt,
)
from coding_framework.testing.engine import tiny_tokenizer
from coding_framework.workspace import DEFAULT_TOOLS, ToolCall, tool_specs


@pytest.mark.parametrize("fmt", ["json", "hermes"])
def test_a_rendered_call_reads_back(fmt):
    call = ToolCall("replace_in_file", {"path": "a.py", "old": "x - 1", "new": "x + 1"})
    assert parse_tool_call("I will fix it.\n" + render_call(call, fmt) + "\nthen run", fmt) == call


def test_a_python_block_is_not_a_call():
    answer = "Fix:\n```python\ndef f():\n    return 1\n```\nThen it works.\n"
    assert "no tool call found" in (read_turn(answer, "json").error or "")
    assert parse_tool_call(answer + '```\n{"name": "finish"}\n```', "json") == ToolCall("finish", {})


def test_lenient_where_models_commonly_slip():
    assert parse_tool_call('```json\n{"name": "list_files", "arguments": "{}"}\n```', "json") == \
        ToolCall("list_files", {})
    assert parse_tool_call('<tool_call>{"name": "finish"}', "hermes") == ToolCall("finish", {})


@pytest.mark.parametrize(("text", "message"), [
    ("I think the bug is in ops.py", "no tool call found"),
    ("```tool\n{name: read_file}\n```", "not valid JSON"),
    ('```tool\n["read_file"]\n```', "a JSON object with a string"),
    ('```tool\n{"name": "read_file", "arguments": [1]}\n```', '"arguments" must be a JSON object'),
])
def test_unusable_answers_say_why(text, message):
    with pytest.raises(ToolCallParseError, match=message):
        parse_tool_call(text, "json")
    turn = read_turn(text, "json")
    assert turn.call is None and message in (turn.error or "")


def test_format_follows_the_chat_template():
    assert format_for(tiny_tokenizer()) == "json"

    class Qwen:
        chat_template = "{% for m in messages %}...<tool_call>...{% endfor %}"

    assert format_for(Qwen()) == "hermes"
    assert "<tools>" in tools_prompt(tool_specs(DEFAULT_TOOLS), "hermes")
    assert "- read_file(path, start?, end?)" in tools_prompt(tool_specs(DEFAULT_TOOLS), "json")
