"""Rewrite trusted test code so each test unit reports its own outcome (stdlib only).

A *test unit* is a top-level statement of the test body that contains an ``assert`` (a loop full of
asserts is one unit). Other statements are setup and run as written. The judge counts the units
before running anything, so a verdict of "passed" needs a recorded pass for every one of them.
"""

from __future__ import annotations

import ast

RECORD_PASS = "__cf_pass__"
RECORD_FAIL = "__cf_fail__"
_EXC = "__cf_exc__"


def _is_test(stmt: ast.stmt) -> bool:
    for node in ast.walk(stmt):
        if isinstance(node, ast.Assert) and not isinstance(node.test, ast.Constant):
            return True
    return False


def _wrap(stmt: ast.stmt, index: int) -> ast.stmt:
    call = lambda name, *args: ast.Expr(  # noqa: E731
        ast.Call(ast.Name(name, ast.Load()), [ast.Constant(index), *args], [])
    )
    return ast.Try(
        body=[stmt],
        handlers=[
            ast.ExceptHandler(
                type=ast.Name("Exception", ast.Load()),
                name=_EXC,
                body=[call(RECORD_FAIL, ast.Name(_EXC, ast.Load()))],
            )
        ],
        orelse=[call(RECORD_PASS)],
        finalbody=[],
    )


def _instrument_body(body: list[ast.stmt], sources: list[str]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for stmt in body:
        if _is_test(stmt):
            sources.append(ast.unparse(stmt))
            out.append(_wrap(stmt, len(sources) - 1))
        else:
            out.append(stmt)
    return out


def instrument(test_code: str, test_format: str, filename: str = "<tests>"):
    """Return ``(code_object, unit_sources, free_names)`` for the instrumented tests.

    ``check_function``: the units are the top-level statements of ``def check(candidate)``.
    ``asserts``: the units are the module's top-level statements.
    """
    tree = ast.parse(test_code, filename=filename)
    free = free_names(tree)
    sources: list[str] = []
    if test_format == "check_function":
        checks = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "check"]
        if not checks:
            raise ValueError("test code has no `def check(candidate)` function")
        checks[-1].body = _instrument_body(checks[-1].body, sources)
    elif test_format == "asserts":
        tree.body = _instrument_body(tree.body, sources)
    else:
        raise ValueError(f"unknown test format {test_format!r}")
    ast.fix_missing_locations(tree)
    return compile(tree, filename, "exec"), sources, free


def free_names(tree: ast.AST) -> set[str]:
    """Names the tests read; those neither trusted nor builtin are looked up in the submission."""
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
