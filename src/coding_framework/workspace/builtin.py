"""The built-in repository tools: list, read, replace, write, run the visible tests, finish."""

from __future__ import annotations

import inspect

from coding_framework.grading.repository import program_for
from coding_framework.problems.problem import Problem
from coding_framework.repotasks import testrun
from coding_framework.workspace.files import WorkspaceError
from coding_framework.workspace.tools import ToolContext, tool

DEFAULT_TOOLS = ["list_files", "read_file", "replace_in_file", "write_file", "run_tests", "finish"]


@tool("list_files", "List the repository's files, optionally under a directory.")
async def list_files(ctx: ToolContext, directory: str = "") -> str:
    return "\n".join(ctx.workspace.list(directory)) or "(no files)"


@tool("read_file", "Read a file with line numbers; `start` and `end` (1-based, inclusive) pick a range.")
async def read_file(ctx: ToolContext, path: str, start: int | None = None, end: int | None = None) -> str:
    return ctx.workspace.read(path, start, end) or "(empty file)"


@tool("replace_in_file", "Replace the one occurrence of `old` in a file with `new` (exact text, whitespace "
      "included).")
async def replace_in_file(ctx: ToolContext, path: str, old: str, new: str) -> str:
    line = ctx.workspace.replace(path, old, new)
    return f"replaced 1 occurrence in {path} at line {line}"


@tool("write_file", "Create or overwrite a file with `content`.")
async def write_file(ctx: ToolContext, path: str, content: str) -> str:
    ctx.workspace.write(path, content)
    return f"wrote {path} ({len(content.splitlines())} lines)"


def visible_tests(paths: list[str]) -> list[str]:
    return [p for p in paths if p.endswith(".py") and (p.rsplit("/", 1)[-1].startswith("test_")
                                                        or p.endswith("_test.py"))]


_RUNNER = inspect.getsource(testrun)


@tool("run_tests", "Run the repository's tests (all test files, or one `path`) in the sandbox and show the "
      "failures.")
async def run_tests(ctx: ToolContext, path: str = "") -> str:
    if ctx.grader is None:
        raise WorkspaceError("running tests needs a sandbox, and this episode has none")
    tests = [p for p in visible_tests(ctx.workspace.list())
             if not path or p == path or p.startswith(path + "/")]
    if not tests:
        raise WorkspaceError(f"no test files{' under ' + repr(path) if path else ''}")
    run = "\n".join([
        "_cf_runner = {'__name__': 'testrun'}",
        f"exec(compile({_RUNNER!r}, 'testrun.py', 'exec'), _cf_runner)",
        "def _cf_run():",
        f"    results = _cf_runner['run_test_files']('repo', {tests!r}, {ctx.budget.run_timeout_s!r})",
        "    print(_cf_runner['format_report'](results))",
        "    return True",
    ])
    program = program_for(ctx.workspace.files, [], run)
    problem = Problem(task_id="visible-tests", prompt="run the visible tests", entry_point="_cf_run",
                      test_code="def check(candidate):\n    assert candidate() is True\n",
                      test_format="check_function", timeout_s=ctx.budget.run_timeout_s)
    result = await ctx.grader.agrade(problem, program)
    if result.timed_out:
        limit = ctx.budget.run_timeout_s
        return f"the test run took longer than {limit:g} s and was stopped\n{result.stdout}"
    if not result.passed and not result.stdout:
        return f"the test run failed before any test ran: {result.error_type}: {result.error_message}"
    return result.stdout.strip()


@tool("finish", "Stop: the change is complete. `summary` says what was changed and why.")
async def finish(ctx: ToolContext, summary: str = "") -> str:
    ctx.finished, ctx.summary = True, summary
    return "finished"


__all__ = ["DEFAULT_TOOLS", "finish", "list_files", "read_file", "replace_in_file", "run_tests",
           "visible_tests", "write_file"]
