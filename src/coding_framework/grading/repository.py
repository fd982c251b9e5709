"""Grading repository tasks with their hidden tests, in the hardened tier.

A repository task's hidden tests are pytest-style functions from the trusted task (``RepoTask.test_patch``).
They run in the judge's trusted process, like HumanEval's ``check``: each is one test unit of a
``check_function`` job, and every call into the repository is a round trip to the untrusted child, which
holds the repository and nothing else. The child's program writes the repository's files into its private
working directory and imports from there, so the code under test runs as files, as it would in a checkout.

What the child gets is a fresh copy of the task's snapshot plus the agent's diff of non-test files.
Edits to anything a test run reads besides the code under test (tests, ``conftest.py``, pytest and packaging
configuration, ``sitecustomize``, ``.pth`` files) are refused: dropped, and listed in the verdict. The hidden
tests never enter the child, so it cannot read them, and a test passes only when the judge recorded its
pass: printing fake results, exiting early or failing to import leaves the tests unrecorded, hence failed.
"""

from __future__ import annotations

import ast
import fnmatch
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from coding_framework.grading.grader import Grader
from coding_framework.problems.problem import Problem
from coding_framework.repotasks.task import RepoTask
from coding_framework.sandbox import ExecutionResult

TIER = "hardened-repository"
"""The tier every repository verdict names: hidden tests in the trusted judge, the repository in the child."""

PROTECTED = (
    "tests/*", "*/tests/*", "test_*.py", "*/test_*.py", "*_test.py", "conftest.py", "*/conftest.py",
    "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", "setup.py", "noxfile.py",
    "sitecustomize.py", "*/sitecustomize.py", "usercustomize.py", "*/usercustomize.py", "*.pth",
    ".pytest_cache/*",
)
"""Files the agent may not change: anything a test run reads besides the code under test."""

PYTEST_SHIM = '''
class _Raises:
    def __init__(self, expected, match=None):
        self.expected, self.match = expected, match
    def __enter__(self):
        return self
    def __exit__(self, kind, value, tb):
        name = getattr(self.expected, '__name__', str(self.expected))
        if kind is None:
            raise AssertionError(f"DID NOT RAISE {name}")
        if isinstance(self.expected, (type, tuple)):
            if not issubclass(kind, self.expected):
                return False
        elif kind.__name__ != name and not str(value).startswith(name + ":"):
            # The repository's own exception class lives in the child: it is matched by its name.
            return False
        if self.match is not None:
            import re
            assert re.search(self.match, str(value)), f"{str(value)!r} does not match {self.match!r}"
        return True

class _Approx:
    def __init__(self, expected, rel=1e-6, abs=1e-12):
        self.expected, self.rel, self.abs = expected, rel, abs
    def _close(self, a, b):
        if isinstance(b, (list, tuple)):
            return isinstance(a, (list, tuple)) and len(a) == len(b) and all(map(self._close, a, b))
        if isinstance(b, dict):
            return isinstance(a, dict) and a.keys() == b.keys() and all(self._close(a[k], b[k]) for k in b)
        if not isinstance(a, (int, float)) or isinstance(a, bool) != isinstance(b, bool):
            return a == b
        return a == b or abs(a - b) <= max(self.rel * abs(b), self.abs)
    def __eq__(self, other):
        return self._close(other, self.expected)
    def __repr__(self):
        return f"approx({self.expected!r})"

class pytest:
    raises = _Raises
    approx = _Approx
'''
"""The part of pytest the hidden tests may use (``pytest.raises``, ``pytest.approx``), defined on the trusted
side. An exception class of the repository's own is matched by its name: the class lives in the child."""

_REPO_DIR = "repo"


class RepositoryTestError(ValueError):
    """Hidden tests this grader cannot run (a shape other than plain pytest-style test functions)."""


def protected(path: str) -> bool:
    """Whether ``path`` (relative, POSIX) is one the agent may not change."""
    return any(fnmatch.fnmatch(path, pattern) for pattern in PROTECTED) or path.startswith(".git/")


@dataclass(frozen=True)
class AgentDiff:
    """The agent's changes to a snapshot: the ones applied, and the ones refused (protected paths)."""

    changed: dict[str, str | None]
    """Path -> new text, or None for a deleted file; non-protected paths only."""
    refused: tuple[str, ...]

    def apply(self, files: Mapping[str, str]) -> dict[str, str]:
        out = dict(files)
        for path, text in self.changed.items():
            if text is None:
                out.pop(path, None)
            else:
                out[path] = text
        return out


def agent_diff(before: Mapping[str, str], after: Mapping[str, str]) -> AgentDiff:
    """What changed from ``before`` to ``after``, split into applied and refused edits."""
    changed: dict[str, str | None] = {}
    refused = []
    for path in sorted(set(before) | set(after)):
        new = after.get(path)
        if before.get(path) == new:
            continue
        if protected(path):
            refused.append(path)
        else:
            changed[path] = new
    return AgentDiff(changed, tuple(refused))


def program_for(files: Mapping[str, str], imports: list[str], run: str = "") -> str:
    """The child's program: write ``files`` under its working directory, import from there, then ``imports``
    (``from pkg.mod import name`` lines) and ``run``."""
    return "\n".join([
        "import os as _cf_os, sys as _cf_sys",
        f"_cf_files = {json.dumps(dict(files))}",
        "for _cf_path, _cf_text in _cf_files.items():",
        f"    _cf_full = _cf_os.path.join({_REPO_DIR!r}, _cf_path)",
        "    _cf_os.makedirs(_cf_os.path.dirname(_cf_full), exist_ok=True)",
        "    with open(_cf_full, 'w', encoding='utf-8') as _cf_out:",
        "        _cf_out.write(_cf_text)",
        f"_cf_sys.path.insert(0, _cf_os.path.abspath({_REPO_DIR!r}))",
        "del _cf_files, _cf_path, _cf_text, _cf_full, _cf_out",
        *imports,
        run,
    ])


def _top_modules(files: Mapping[str, str]) -> set[str]:
    tops = set()
    for path in files:
        parts = PurePosixPath(path).parts
        if len(parts) > 1 and f"{parts[0]}/__init__.py" in files:
            tops.add(parts[0])
        elif len(parts) == 1 and path.endswith(".py"):
            tops.add(path[:-3])
    return tops


@dataclass(frozen=True)
class HiddenSuite:
    """The hidden tests as one trusted ``check_function`` problem: unit i is test ``names[i]``."""

    problem: Problem
    names: tuple[str, ...]
    imports: tuple[str, ...] = field(default=())


def hidden_suite(task: RepoTask, timeout_s: float = 30.0) -> HiddenSuite:
    """Turn the task's hidden test files into one trusted test program.

    Imports from the repository's own packages move to the child's program (the names they bind become
    calls into it); other imports (the standard library) stay on the trusted side; ``pytest`` is the shim.
    """
    hidden = task.hidden_files()
    wanted = set(task.FAIL_TO_PASS) | set(task.PASS_TO_PASS)
    tops = _top_modules(task.files)
    defs: list[str] = []
    names: list[str] = []
    imports: list[str] = []
    trusted_imports: list[str] = []
    for path in sorted(hidden):
        try:
            tree = ast.parse(hidden[path], filename=path)
        except SyntaxError as exc:
            raise RepositoryTestError(
                f"{task.instance_id}: hidden test file {path} does not parse: {exc}"
            ) from None
        for node in tree.body:
            own = isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in tops
            if isinstance(node, ast.ImportFrom) and node.level == 0 and own:
                imports.append(ast.unparse(node))
            elif isinstance(node, ast.Import) and any(a.name.split(".")[0] in tops for a in node.names):
                raise RepositoryTestError(f"{task.instance_id}: {path}: use `from pkg import name` for the "
                                          "repository's modules in hidden tests")
            elif isinstance(node, ast.Import) and [a.name for a in node.names] == ["pytest"]:
                continue
            elif isinstance(node, ast.Import | ast.ImportFrom):
                trusted_imports.append(ast.unparse(node))
            elif isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                test_id = f"{path}::{node.name}"
                if test_id in wanted:
                    node.name = f"_cf_test_{len(names)}"
                    defs.append(ast.unparse(node))
                    names.append(test_id)
            elif not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
                raise RepositoryTestError(f"{task.instance_id}: {path}: hidden tests must be plain test "
                                          f"functions (found `{ast.unparse(node)[:60]}`)")
    missing = wanted - set(names)
    if missing:
        raise RepositoryTestError(f"{task.instance_id}: tests named in FAIL_TO_PASS/PASS_TO_PASS are not in "
                                  f"its test_patch: {sorted(missing)[:5]}")
    check = "def check(candidate):\n" + "".join(
        f"    assert _cf_test_{i}() is None\n" for i in range(len(names))
    )
    test_code = "\n".join([*trusted_imports, *defs, check])
    entry = _first_name(imports) or "__name__"
    problem = Problem(task_id=task.instance_id, prompt=task.problem_statement, entry_point=entry,
                      test_code=test_code, test_format="check_function", prelude=PYTEST_SHIM,
                      source=f"repository:{task.repo}", prompt_is_code=False, timeout_s=timeout_s)
    return HiddenSuite(problem, tuple(names), tuple(dict.fromkeys(imports)))


def _first_name(imports: list[str]) -> str | None:
    for line in imports:
        node = ast.parse(line).body[0]
        if isinstance(node, ast.ImportFrom) and node.names:
            return node.names[0].asname or node.names[0].name
    return None


@dataclass(frozen=True)
class RepoVerdict:
    """The grade of one repository state against a task's hidden tests."""

    instance_id: str
    resolved: bool
    fail_to_pass: tuple[int, int]
    """(passed, total)."""
    pass_to_pass: tuple[int, int]
    refused: tuple[str, ...]
    status: str
    infrastructure_error: bool
    failures: tuple[str, ...] = ()
    tier: str = TIER

    @property
    def reward(self) -> float:
        """The training reward: the share of FAIL_TO_PASS passed times the share of PASS_TO_PASS kept."""
        f_pass, f_total = self.fail_to_pass
        p_pass, p_total = self.pass_to_pass
        return (f_pass / f_total) * (p_pass / p_total if p_total else 1.0)

    def as_dict(self) -> dict[str, object]:
        return {"instance_id": self.instance_id, "resolved": self.resolved, "reward": self.reward,
                "fail_to_pass": list(self.fail_to_pass), "pass_to_pass": list(self.pass_to_pass),
                "refused": list(self.refused), "status": self.status,
                "infrastructure_error": self.infrastructure_error, "failures": list(self.failures),
                "tier": self.tier}


def grading_program(task: RepoTask, files: Mapping[str, str], suite: HiddenSuite) -> tuple[str, AgentDiff]:
    """The child's program for ``files`` (the agent's repository): the snapshot plus the agent's diff of
    non-test files, without any test file."""
    diff = agent_diff(task.files, files)
    graded = {p: t for p, t in diff.apply(task.files).items() if not protected(p)}
    return program_for(graded, list(suite.imports)), diff


def verdict_for(task: RepoTask, suite: HiddenSuite, diff: AgentDiff, result: ExecutionResult) -> RepoVerdict:
    outcome = {suite.names[t.index]: t for t in result.tests if t.index < len(suite.names)}
    failures = tuple(
        f"{name}: {t.error_type}: {t.message}" if (t := outcome.get(name)) else f"{name}: not run"
        for name in suite.names if not (outcome.get(name) and outcome[name].passed)
    )

    def passed(names: list[str]) -> int:
        return sum(1 for n in names if (t := outcome.get(n)) is not None and t.passed)

    f2p = (passed(task.FAIL_TO_PASS), len(task.FAIL_TO_PASS))
    p2p = (passed(task.PASS_TO_PASS), len(task.PASS_TO_PASS))
    infra = result.error_type == "SandboxInfrastructureError"
    return RepoVerdict(task.instance_id, f2p[0] == f2p[1] and p2p[0] == p2p[1], f2p, p2p, diff.refused,
                       result.status, infra, failures[:20])


async def agrade_repository(grader: Grader, task: RepoTask, files: Mapping[str, str],
                            suite: HiddenSuite | None = None) -> RepoVerdict:
    """Grade the repository state ``files`` (path -> text) against ``task``'s hidden tests."""
    suite = suite or hidden_suite(task)
    program, diff = grading_program(task, files, suite)
    return verdict_for(task, suite, diff, await grader.agrade(suite.problem, program))


def grade_repositories(grader: Grader, items: list[tuple[RepoTask, Mapping[str, str]]],
                       progress: bool | str = False) -> list[RepoVerdict]:
    """Grade many repository states at once (the sandbox's workers in parallel); verdicts in input order."""
    suites = [hidden_suite(task) for task, _ in items]
    built = [grading_program(task, files, suite) for (task, files), suite in zip(items, suites, strict=True)]
    results = grader.grade_many([(s.problem, p) for s, (p, _) in zip(suites, built, strict=True)],
                                progress=progress)
    return [verdict_for(task, suite, diff, result) for (task, _), suite, (_, diff), result
            in zip(items, suites, built, results, strict=True)]


__all__ = [
    "PROTECTED", "PYTEST_SHIM", "TIER", "AgentDiff", "HiddenSuite", "RepoVerdict", "RepositoryTestError",
    "agent_diff", "agrade_repository", "grade_repositories", "grading_program", "hidden_suite",
    "program_for", "protected", "verdict_for",
]
