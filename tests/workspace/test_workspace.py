"""The workspace the agent's tools act on, and the tool registry."""

from __future__ import annotations

import asyncio

import pytest

from coding_framework.grading import Grader
from coding_framework.testing.repository import calc_task
from coding_framework.workspace import (
    DEFAULT_TOOLS,
    TOOLS,
    ToolBudget,
    ToolCall,
    ToolContext,
    Workspace,
    WorkspaceError,
    call_tool,
    tool,
    tool_specs,
)


def _ctx(grader=None, **budget) -> ToolContext:
    return ToolContext(Workspace(calc_task().files), grader, ToolBudget(**budget))


def _call(ctx: ToolContext, name: str, **arguments):
    return asyncio.run(call_tool(ctx, ToolCall(name, arguments)))


@pytest.mark.parametrize("path", ["/etc/passwd", "../outside.py", "calc/../../x", ".git/config", ""])
def test_paths_outside_the_copy_are_refused(path):
    with pytest.raises(WorkspaceError):
        Workspace({"a.py": ""}).write(path, "x")


def test_read_lists_lines_and_replace_needs_exactly_one_match():
    ws = Workspace(calc_task().files)
    assert ws.read("calc/ops.py", 2, 2) == "   2     return a - b"
    with pytest.raises(WorkspaceError, match="occurs 0 times"):
        ws.replace("calc/ops.py", "a * b", "a + b")
    with pytest.raises(WorkspaceError, match="occurs 2 times"):
        ws.replace("calc/ops.py", "return", "yield")
    assert ws.replace("calc/ops.py", "a - b", "a + b") == 2
    assert set(ws.changed()) == {"calc/ops.py"}
    assert "-    return a - b\n+    return a + b\n" in ws.diff()
    with pytest.raises(WorkspaceError, match="no file"):
        ws.read("calc/missing.py")


def test_bad_calls_become_error_observations_and_the_budget_cuts_output():
    ctx = _ctx(output_chars=200)
    unknown = _call(ctx, "rm_rf", path="/")
    assert not unknown.ok and "no tool 'rm_rf'" in unknown.text
    missing = _call(ctx, "read_file")
    assert not missing.ok and "path: Field required" in missing.text
    extra = _call(ctx, "read_file", path="calc/ops.py", mode="w")
    assert not extra.ok and "mode: Extra inputs are not permitted" in extra.text
    ctx.workspace.write("big.txt", "x" * 1000)
    cut = _call(ctx, "read_file", path="big.txt")
    assert cut.ok and cut.text.endswith("more characters cut]") and len(cut.text) < 300


def test_a_user_tool_registers_with_one_decorator():
    @tool("count_lines", "Count a file's lines.")
    async def count_lines(ctx: ToolContext, path: str) -> str:
        return str(len(ctx.workspace.read(path).splitlines()))

    try:
        assert tool_specs(["count_lines"])[0].schema()["parameters"]["required"] == ["path"]
        assert _call(_ctx(), "count_lines", path="calc/ops.py").text == "8"
    finally:
        TOOLS.pop("count_lines")
    assert [s.name for s in tool_specs(DEFAULT_TOOLS)] == DEFAULT_TOOLS


def test_run_tests_runs_the_visible_tests_in_the_sandbox():
    with Grader() as grader:
        ctx = _ctx(grader)
        assert _call(ctx, "run_tests").text.endswith("1 passed, 0 failed")
        ctx.workspace.write("calc/ops.py", ctx.workspace.files["calc/ops.py"].replace("x // 2", "x // 3"))
        report = _call(ctx, "run_tests", path="tests")
        assert "test_half" in report.text and report.text.endswith("0 passed, 1 failed")
        assert not _call(ctx, "run_tests", path="nowhere").ok
    ctx = _ctx()
    assert "needs a sandbox" in _call(ctx, "run_tests").text
    assert _call(ctx, "finish", summary="done").text == "finished" and ctx.finished
