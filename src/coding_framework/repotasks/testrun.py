"""Run a repository task's pytest-style test files without pytest, and probe why a test fails.

Standard library only, and nothing runs at import: this file is also sent as source text into the sandbox
and executed there. A test file holds top-level ``def test_x():`` functions of asserts, may import the
repository's package, and may use ``pytest.raises``, which a small shim provides. Results are keyed
``path::test_name``; a file that fails to import gives one failed ``path::<collection>`` entry, so callers
must count a test that is missing from the results as failed.

``probe_failure`` and ``evaluate_expressions`` serve the mini-repository generator: they find the call a
failing test made and evaluate it, so an issue can describe the wrong behaviour without quoting the test.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import inspect
import io
import itertools
import os
import signal
import sys
import threading
import types
from collections.abc import Callable, Iterator
from typing import Any

COLLECTION = "<collection>"
_MAX_ERROR = 300
_MAX_REPR = 200
_counter = itertools.count()


class TestTimeout(Exception):
    """A test ran past its time limit."""

    __test__ = False


class _Raises:
    """``pytest.raises``: the block must raise ``exc_type`` (and match ``match``, a regex, if given)."""

    def __init__(
        self, exc_type: type[BaseException] | tuple[type[BaseException], ...], match: str | None = None
    ):
        self.exc_type = exc_type
        self.match = match
        self.value: BaseException | None = None

    def __enter__(self) -> _Raises:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: object) -> bool:
        if kind is None or value is None:
            raise AssertionError(f"DID NOT RAISE {_type_names(self.exc_type)}")
        if not issubclass(kind, self.exc_type):
            return False
        if self.match is not None:
            import re

            if not re.search(self.match, str(value)):
                raise AssertionError(f"Regex {self.match!r} does not match {str(value)!r}")
        self.value = value
        return True


def _type_names(exc_type: type[BaseException] | tuple[type[BaseException], ...]) -> str:
    kinds = exc_type if isinstance(exc_type, tuple) else (exc_type,)
    return " or ".join(k.__name__ for k in kinds)


def _pytest_shim() -> types.ModuleType:
    shim = types.ModuleType("pytest")
    shim.raises = _Raises  # type: ignore[attr-defined]
    return shim


def _describe(exc: BaseException) -> str:
    """``ExcType: first line of the message``, cut short."""
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return text if len(text) <= _MAX_ERROR else text[: _MAX_ERROR - 3] + "..."


def _packages(root: str) -> list[str]:
    return sorted(
        name for name in os.listdir(root) if os.path.isfile(os.path.join(root, name, "__init__.py"))
    )


@contextlib.contextmanager
def _environment(root: str) -> Iterator[list[str]]:
    """``root`` first on ``sys.path``, the pytest shim installed, and the repository's packages imported
    afresh; everything restored afterwards. Yields the names of the top-level packages under ``root``."""
    packages = _packages(root)

    def forget() -> None:
        for name in list(sys.modules):
            if name.split(".")[0] in packages or name.startswith("_testrun_"):
                del sys.modules[name]

    saved_path = list(sys.path)
    saved_pytest = sys.modules.get("pytest")
    forget()
    sys.path.insert(0, root)
    sys.modules["pytest"] = _pytest_shim()
    try:
        yield packages
    finally:
        forget()
        sys.path[:] = saved_path
        if saved_pytest is None:
            sys.modules.pop("pytest", None)
        else:
            sys.modules["pytest"] = saved_pytest


@contextlib.contextmanager
def _time_limit(seconds: float | None) -> Iterator[None]:
    """Raise TestTimeout in the block after ``seconds`` (main thread with SIGALRM only; else no limit)."""
    main = threading.current_thread() is threading.main_thread()
    if seconds is None or not hasattr(signal, "setitimer") or not main:
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise TestTimeout(f"ran past {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _quiet() -> contextlib.ExitStack:
    stack = contextlib.ExitStack()
    stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
    stack.enter_context(contextlib.redirect_stderr(io.StringIO()))
    return stack


def _import(root: str, test_path: str) -> types.ModuleType:
    name = f"_testrun_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, os.path.join(root, test_path))
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {test_path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _tests(module: types.ModuleType) -> list[tuple[str, Callable[[], object]]]:
    """Top-level ``test_*`` functions defined in the module itself, in file order."""
    found = [
        (name, value)
        for name, value in vars(module).items()
        if name.startswith("test_") and inspect.isfunction(value) and value.__module__ == module.__name__
    ]
    return sorted(found, key=lambda item: item[1].__code__.co_firstlineno)


def _failure_line(exc: BaseException, test_file: str) -> int | None:
    """The line of ``test_file`` where the exception passed last (the test's own failing statement)."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename) == os.path.abspath(test_file):
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def run_test_files(
    root: str, test_paths: list[str], timeout_s: float | None = None
) -> dict[str, dict[str, Any]]:
    """Run every top-level ``test_*`` function of each file (paths relative to ``root``).

    Returns ``{"path::test_name": {"passed": bool}}``; a failed test also has ``error`` ("ExcType:
    message") and ``line`` (where in the test file it failed, when known). ``timeout_s`` limits each test
    (and each file's import) where SIGALRM is available in the main thread."""
    root = os.path.abspath(root)
    results: dict[str, dict[str, Any]] = {}
    with _environment(root):
        for test_path in test_paths:
            full = os.path.join(root, test_path)
            try:
                with _quiet(), _time_limit(timeout_s):
                    module = _import(root, test_path)
            except BaseException as exc:  # a broken file fails; KeyboardInterrupt still stops the run
                if isinstance(exc, KeyboardInterrupt):
                    raise
                results[f"{test_path}::{COLLECTION}"] = {"passed": False, "error": _describe(exc)}
                continue
            for name, function in _tests(module):
                try:
                    with _quiet(), _time_limit(timeout_s):
                        function()
                except BaseException as exc:
                    if isinstance(exc, KeyboardInterrupt):
                        raise
                    results[f"{test_path}::{name}"] = {
                        "passed": False,
                        "error": _describe(exc),
                        "line": _failure_line(exc, full),
                    }
                else:
                    results[f"{test_path}::{name}"] = {"passed": True}
    return results


def format_report(results: dict[str, dict[str, Any]]) -> str:
    """A short pytest-like summary: one line per failed test with its error, then the counts."""
    lines = [f"FAILED {test} - {r.get('error', 'failed')}" for test, r in results.items() if not r["passed"]]
    passed = sum(1 for r in results.values() if r["passed"])
    lines.append(f"{passed} passed, {len(results) - passed} failed")
    return "\n".join(lines)


def _outcome(thunk: Callable[[], object], timeout_s: float | None) -> dict[str, str]:
    """``{"value": repr}`` or ``{"raised": "ExcType: message", "type": "ExcType"}``."""
    try:
        with _quiet(), _time_limit(timeout_s):
            value = thunk()
    except Exception as exc:
        return {"raised": _describe(exc), "type": type(exc).__name__}
    text = repr(value)
    return {"value": text if len(text) <= _MAX_REPR else text[: _MAX_REPR - 3] + "..."}


def _package_function(value: object, packages: list[str]) -> bool:
    return inspect.isfunction(value) and value.__module__.split(".")[0] in packages


def _statement_at(function: ast.FunctionDef, line: int) -> tuple[ast.stmt | None, ast.With | None]:
    """The innermost statement of ``function`` spanning ``line``, and the innermost ``with raises(...)``
    block around (or at) it."""
    found: ast.stmt | None = None
    raises: ast.With | None = None
    body: list[ast.stmt] = function.body
    while True:
        inner = next((s for s in body if s.lineno <= line <= (s.end_lineno or s.lineno)), None)
        if inner is None:
            return found, raises
        found = inner
        if isinstance(inner, ast.With) and any(_is_raises(item.context_expr) for item in inner.items):
            raises = inner
        children = [getattr(inner, f, []) for f in ("body", "orelse", "finalbody")]
        children += [h.body for h in getattr(inner, "handlers", [])]
        body = [s for block in children for s in block]


def _is_raises(node: ast.expr) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Attribute) and func.attr == "raises") or (
        isinstance(func, ast.Name) and func.id == "raises"
    )


def _outermost_call(nodes: list[ast.AST], namespace: dict[str, Any], packages: list[str]) -> ast.Call | None:
    """The first call of a package function found breadth-first: the outermost one."""
    queue = list(nodes)
    while queue:
        node = queue.pop(0)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and _package_function(namespace.get(node.func.id), packages)
        ):
            return node
        queue.extend(ast.iter_child_nodes(node))
    return None


class _Inline(ast.NodeTransformer):
    """Replace local names by their values written as literals; remember the names that could not be."""

    def __init__(self, local_values: dict[str, Any]):
        self.local_values = local_values
        self.missing: list[str] = []

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id not in self.local_values:
            return node
        value = self.local_values[node.id]
        try:
            literal = ast.parse(repr(value), mode="eval").body
            same = ast.literal_eval(literal) == value and type(ast.literal_eval(literal)) is type(value)
        except (SyntaxError, ValueError, TypeError, RecursionError):
            same = False
        if not same:
            self.missing.append(node.id)
            return node
        return literal


def probe_failure(
    root: str, test_path: str, test_name: str, timeout_s: float | None = None
) -> dict[str, Any] | None:
    """The package call a failing test made at its failing statement, written standalone, and what it did.

    Returns None when the test passes or no package call can be found there; else ``expression`` (the
    call with the test's local variables written as literals), ``function`` and ``module`` (the called
    function's name and module), ``expects_raise`` (the exception type ``pytest.raises`` wanted, or None),
    ``standalone`` (no local names remain) and ``outcome`` (what ``expression`` gives here, see
    ``evaluate_expressions``)."""
    root = os.path.abspath(root)
    full = os.path.join(root, test_path)
    with _environment(root) as packages:
        try:
            with _quiet(), _time_limit(timeout_s):
                module = _import(root, test_path)
        except Exception:
            return None
        function = vars(module).get(test_name)
        if not inspect.isfunction(function):
            return None
        try:
            with _quiet(), _time_limit(timeout_s):
                function()
        except Exception as exc:
            error = exc
        else:
            return None
        frame_locals: dict[str, Any] = {}
        line = None
        tb = error.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code is function.__code__:
                frame_locals, line = dict(tb.tb_frame.f_locals), tb.tb_lineno
            tb = tb.tb_next
        if line is None:
            return None
        with open(full, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        definition = next(
            (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == test_name), None
        )
        if definition is None:
            return None
        statement, raises = _statement_at(definition, line)
        if statement is None:
            return None
        where: list[ast.AST] = (
            list(raises.body) if raises is not None and statement is raises else [statement]
        )
        namespace = vars(module)
        call = _outermost_call(where, namespace, packages)
        if call is None:
            return None
        inline = _Inline(frame_locals)
        rendered = ast.fix_missing_locations(inline.visit(ast.parse(ast.unparse(call), mode="eval")))
        expression = ast.unparse(rendered)
        called = namespace[call.func.id]  # type: ignore[attr-defined]
        expects = None
        if raises is not None:
            expected_type = raises.items[0].context_expr.args  # type: ignore[attr-defined]
            expects = ast.unparse(expected_type[0]) if expected_type else None
        outcome = _outcome(lambda: eval(compile(rendered, test_path, "eval"), dict(namespace)), timeout_s)
        return {
            "expression": expression,
            "function": called.__name__,
            "module": called.__module__,
            "expects_raise": expects,
            "standalone": not inline.missing,
            "outcome": outcome,
        }


def evaluate_expressions(
    root: str, requests: list[tuple[str, str]], timeout_s: float | None = None
) -> list[dict[str, str]]:
    """Each ``(test_path, expression)`` evaluated with the names the test file imports: ``{"value":
    repr}``, or ``{"raised": "ExcType: message", "type": "ExcType"}`` (also when the file cannot load)."""
    root = os.path.abspath(root)
    out: list[dict[str, str]] = []
    namespaces: dict[str, dict[str, Any] | BaseException] = {}
    with _environment(root):
        for test_path, expression in requests:
            if test_path not in namespaces:
                try:
                    with _quiet(), _time_limit(timeout_s):
                        namespaces[test_path] = vars(_import(root, test_path))
                except Exception as exc:
                    namespaces[test_path] = exc
            namespace = namespaces[test_path]
            if isinstance(namespace, BaseException):
                out.append({"raised": _describe(namespace), "type": type(namespace).__name__})
                continue
            scope = dict(namespace)
            out.append(_outcome(lambda scope=scope, e=expression: eval(e, scope), timeout_s))  # type: ignore[misc]
    return out


__all__ = [
    "COLLECTION",
    "TestTimeout",
    "evaluate_expressions",
    "format_report",
    "probe_failure",
    "run_test_files",
]
