"""Static analysis behind the static Reviewer: ruff lint findings and ast complexity metrics."""

from __future__ import annotations

import ast
import asyncio
import json
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from coding_framework.agents.types import Finding

_BRANCH_NODES = (
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.ExceptHandler,
    ast.IfExp,
    ast.Assert,
    ast.comprehension,
    ast.match_case,
)
_BLOCK_NODES = (
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.Try,
    ast.TryStar,
    ast.With,
    ast.AsyncWith,
    ast.Match,
)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class FunctionMetrics:
    name: str
    line: int
    branches: int
    """Decision points (if, loops, except, conditional expressions, boolean operators): cyclomatic - 1."""
    nesting: int
    """Deepest nesting of blocks (if/for/while/try/with/match) inside the function."""
    length: int
    """Lines from the ``def`` to the function's last line."""


def _branches(fn: ast.AST) -> int:
    count = 0
    for node in ast.walk(fn):
        if isinstance(node, _BRANCH_NODES):
            count += 1 + (len(node.ifs) if isinstance(node, ast.comprehension) else 0)
        elif isinstance(node, ast.BoolOp):
            count += len(node.values) - 1
    return count


def _nesting(node: ast.AST, depth: int = 0) -> int:
    deepest = depth
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (*_FUNCTIONS, ast.Lambda, ast.ClassDef)):
            continue  # nested definitions are measured on their own
        inner = depth + 1 if isinstance(child, _BLOCK_NODES) else depth
        deepest = max(deepest, _nesting(child, inner))
    return deepest


def function_metrics(code: str) -> list[FunctionMetrics]:
    """Metrics of every function in ``code``, nested ones included. Raises SyntaxError on invalid code."""
    tree = ast.parse(code)
    return [
        FunctionMetrics(
            fn.name, fn.lineno, _branches(fn), _nesting(fn), (fn.end_lineno or fn.lineno) - fn.lineno + 1
        )
        for fn in ast.walk(tree)
        if isinstance(fn, _FUNCTIONS)
    ]


def complexity_findings(code: str, max_branches: int, max_nesting: int, max_length: int) -> list[Finding]:
    """Functions over a limit; a syntax error is reported as the one finding."""
    try:
        metrics = function_metrics(code)
    except SyntaxError as exc:
        return [Finding(kind="syntax", message=f"SyntaxError: {exc.msg}", line=exc.lineno)]
    findings = []
    for m in metrics:
        if m.branches > max_branches:
            findings.append(
                Finding(
                    kind="complexity",
                    line=m.line,
                    message=(
                        f"`{m.name}` has {m.branches} decision points (limit {max_branches}); "
                        "split it into helpers"
                    ),
                )
            )
        if m.nesting > max_nesting:
            findings.append(
                Finding(
                    kind="complexity",
                    line=m.line,
                    message=(
                        f"`{m.name}` nests blocks {m.nesting} deep (limit {max_nesting}); "
                        "return early or extract loops"
                    ),
                )
            )
        if m.length > max_length:
            findings.append(
                Finding(
                    kind="complexity",
                    line=m.line,
                    message=(f"`{m.name}` is {m.length} lines long (limit {max_length})"),
                )
            )
    return findings


# Resolved once: a PATH lookup stats files, which must not happen on a serving event loop.
_RUFF = [exe] if (exe := shutil.which("ruff")) else [sys.executable, "-m", "ruff"]


def _ruff_command(select: Sequence[str]) -> list[str]:
    return [
        *_RUFF,
        "check",
        "--isolated",
        "--no-cache",
        "--output-format",
        "json",
        "--select",
        ",".join(select),
        "--stdin-filename",
        "candidate.py",
        "-",
    ]


def parse_ruff_json(output: str) -> list[Finding]:
    findings = []
    for item in json.loads(output or "[]"):
        code = item.get("code") or "invalid-syntax"
        kind = "syntax" if code in ("invalid-syntax", "E999") else "lint"
        findings.append(Finding(kind=kind, line=item["location"]["row"], message=f"{code} {item['message']}"))
    return findings


async def lint_findings(code: str, select: Sequence[str], timeout_s: float = 20.0) -> list[Finding]:
    """ruff findings for ``code`` (read from stdin; nothing is written to disk), without blocking the loop."""
    proc = await asyncio.create_subprocess_exec(
        *_ruff_command(select),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(code.encode()), timeout_s)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise RuntimeError(f"ruff did not finish within {timeout_s}s") from None
    if proc.returncode not in (0, 1):  # 1 means "findings"; anything else is a ruff failure
        raise RuntimeError(f"ruff failed (exit {proc.returncode}): {err.decode(errors='replace').strip()}")
    return parse_ruff_json(out.decode())
