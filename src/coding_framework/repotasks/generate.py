"""Mini-repository tasks: inject a bug into a template package and keep it when the hidden tests catch it.

A template is a small package of plain functions with visible tests (shipped to the agent) and hidden
tests (the grader's). For each public function and each mutation of it (``mutations``), the mutated
repository's tests run on the host in a fresh interpreter (``testrun``); a mutant becomes a task when some
hidden test fails on it. The issue describes the failing behaviour: the package call a failing test made
at its failing statement, evaluated on the mutant and on the original; it never quotes the test. A task's
distance (and so its difficulty) counts the calls from the functions that call names to the buggy one.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from collections import deque
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import structlog

from coding_framework.problems.problem import Difficulty
from coding_framework.repotasks import testrun
from coding_framework.repotasks.minirepo import SPLITS
from coding_framework.repotasks.mutations import MUTATION_KINDS, Mutation, enumerate_mutations
from coding_framework.repotasks.task import RepoTask, apply_patch

log = structlog.get_logger(__name__)

_TESTRUN = Path(testrun.__file__)
# The child interpreter loads testrun.py by path: importing the package would cost far more than the tests.
_CHILD = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("_cf_testrun", sys.argv[1])
testrun = importlib.util.module_from_spec(spec)
spec.loader.exec_module(testrun)
request = json.loads(sys.stdin.read())
root, timeout = request["root"], request["timeout"]
out = {"results": {}}
for path in request["tests"]:  # a file with a test past its limit ends the run: the mutant is dropped
    results = testrun.run_test_files(root, [path], timeout)
    out["results"].update(results)
    if any(r.get("error", "").startswith("TestTimeout") for r in results.values()):
        break
tries = 0
for test in request["probe"]:
    if out["results"].get(test, {"passed": False})["passed"] or tries == 3:
        continue
    tries += 1
    path, name = test.split("::")
    probe = testrun.probe_failure(root, path, name, timeout)
    if probe is not None and probe["standalone"]:
        out["probe"] = {**probe, "test": test}
        break
out["values"] = testrun.evaluate_expressions(root, [tuple(r) for r in request["evaluate"]], timeout)
with open(sys.argv[2], "w", encoding="utf-8") as handle:
    json.dump(out, handle)
"""


class TemplateError(ValueError):
    """A template directory is malformed, or its tests fail before any bug is injected."""


FunctionId = tuple[str, str]  # (dotted module, function name)
IssueFrom = Literal["first", "farthest"]


@dataclass(frozen=True)
class Template:
    """A mini-repository template. Paths are relative to the repository root; hidden tests are keyed by
    where a task's test patch puts them (``tests/<file>``)."""

    name: str
    root: Path
    readme: str
    modules: dict[str, str]
    tests: dict[str, str]
    hidden: dict[str, str]

    def snapshot(self) -> dict[str, str]:
        """What the agent gets: README, package and visible tests."""
        return {"README.md": self.readme, **self.modules, **self.tests}

    def digest(self) -> str:
        """sha256 of everything the tasks are made from, to tell whether a built set is stale."""
        content = json.dumps([self.name, self.snapshot(), self.hidden], sort_keys=True)
        return hashlib.sha256(content.encode("utf-8")).hexdigest()


def _read(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    return text if text.endswith("\n") or not text else text + "\n"


def load_template(directory: str | Path) -> Template:
    """Read a template: ``README.md``, one package directory, ``tests/test_*.py`` and
    ``hidden/test_*.py``."""
    root = Path(directory)
    if not root.is_dir():
        raise TemplateError(f"{root}: not a directory")
    if not (root / "README.md").is_file():
        raise TemplateError(f"{root}: no README.md")
    packages = sorted(p.name for p in root.iterdir() if (p / "__init__.py").is_file())
    if len(packages) != 1:
        raise TemplateError(f"{root}: expected one package directory (with __init__.py), found {packages}")
    name = packages[0]
    if "__" in name:
        raise TemplateError(f"{root}: the package name {name!r} must not contain '__'")
    modules = {f"{name}/{p.name}": _read(p) for p in sorted((root / name).glob("*.py"))}
    tests = {f"tests/{p.name}": _read(p) for p in sorted((root / "tests").glob("test_*.py"))}
    hidden = {f"tests/{p.name}": _read(p) for p in sorted((root / "hidden").glob("test_*.py"))}
    if not hidden:
        raise TemplateError(f"{root}: no hidden/test_*.py files")
    clash = sorted(set(tests) & set(hidden))
    if clash:
        raise TemplateError(f"{root}: hidden test files share names with visible ones: {clash}")
    sources = {**modules, **tests, **{f"hidden/{p[len('tests/') :]}": t for p, t in hidden.items()}}
    for path, text in sources.items():
        try:
            ast.parse(text)
        except SyntaxError as exc:
            raise TemplateError(f"{root / path}:{exc.lineno}: invalid Python: {exc.msg}") from None
    for path in modules:
        if "__" in Path(path).stem.strip("_"):
            raise TemplateError(f"{root}: the module name {path!r} must not contain '__'")
    return Template(name, root, (root / "README.md").read_text(encoding="utf-8"), modules, tests, hidden)


def _module_of(path: str) -> str:
    parts = path[: -len(".py")].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@dataclass
class _Symbols:
    """What names mean at a module's top level: functions it defines, and what it imports."""

    defs: set[str] = field(default_factory=set)
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # local -> (module, name)


def _symbols(tree: ast.Module, module: str, is_package: bool) -> _Symbols:
    out = _Symbols()
    base = module if is_package else module.rpartition(".")[0]
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out.defs.add(node.name)
        elif isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:
                anchor = base.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                source = ".".join([*anchor, *([source] if source else [])])
            for alias in node.names:
                out.imports[alias.asname or alias.name] = (source, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    out.imports[alias.asname] = (alias.name, None)
                else:
                    head = alias.name.split(".")[0]
                    out.imports[head] = (head, None)
    return out


class CallGraph:
    """Which package function refers to (calls, or passes along) which, resolved through imports."""

    def __init__(self, template: Template):
        self.symbols: dict[str, _Symbols] = {}
        trees = {path: ast.parse(text) for path, text in template.modules.items()}
        for path, tree in trees.items():
            module = _module_of(path)
            self.symbols[module] = _symbols(tree, module, path.endswith("__init__.py"))
        self.edges: dict[FunctionId, set[FunctionId]] = {}
        self.order: list[FunctionId] = []
        for path, tree in trees.items():
            module = _module_of(path)
            for node in tree.body:
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    self.order.append((module, node.name))
                    self.edges[(module, node.name)] = set(self.references(node, self.symbols[module], module))

    def resolve(self, module: str, name: str, depth: int = 0) -> FunctionId | str | None:
        """A name imported from ``module``: a package function, a package module (its dotted name), or
        None when it is outside the package."""
        if depth > 20:
            return None
        if module in self.symbols:
            symbols = self.symbols[module]
            if name in symbols.defs:
                return (module, name)
            if name in symbols.imports:
                return self._target(symbols.imports[name], depth + 1)
        submodule = f"{module}.{name}"
        return submodule if submodule in self.symbols else None

    def _target(self, imported: tuple[str, str | None], depth: int) -> FunctionId | str | None:
        source, name = imported
        if name is None:
            return source if source in self.symbols else None
        return self.resolve(source, name, depth)

    def references(self, node: ast.AST, symbols: _Symbols, module: str | None) -> list[FunctionId]:
        """Package functions ``node``'s body names (calls or passes along), in source order, given its
        module's symbols; ``module`` is None for a test file, whose own functions are not the package's."""
        found: list[tuple[tuple[int, int], FunctionId]] = []
        inner: set[int] = set()
        for sub in ast.walk(node):
            if id(sub) in inner or not isinstance(sub, ast.Attribute | ast.Name):
                continue
            names: list[str] = []
            current: ast.expr = sub
            while isinstance(current, ast.Attribute):
                inner.add(id(current.value))
                names.append(current.attr)
                current = current.value
            if not isinstance(current, ast.Name) or not isinstance(current.ctx, ast.Load):
                continue
            target = self._lookup(current.id, symbols, module)
            for attr in reversed(names):
                if not isinstance(target, str):
                    break
                target = self.resolve(target, attr)
            if isinstance(target, tuple):
                found.append(((sub.lineno, sub.col_offset), target))
        return list(dict.fromkeys(target for _, target in sorted(found)))

    def _lookup(self, name: str, symbols: _Symbols, module: str | None) -> FunctionId | str | None:
        if module is not None and name in symbols.defs:
            return (module, name)
        if name in symbols.imports:
            return self._target(symbols.imports[name], 0)
        return None

    def distance(self, sources: Iterable[FunctionId], target: FunctionId) -> int | None:
        """Fewest calls from any of ``sources`` to ``target`` (0 when it is one of them)."""
        queue = deque((s, 0) for s in dict.fromkeys(sources))
        seen = {s for s, _ in queue}
        while queue:
            node, steps = queue.popleft()
            if node == target:
                return steps
            for callee in sorted(self.edges.get(node, ())):
                if callee not in seen:
                    seen.add(callee)
                    queue.append((callee, steps + 1))
        return None


def direct_references(graph: CallGraph, path: str, source: str) -> dict[str, list[FunctionId]]:
    """For each top-level ``test_*`` function of a test file: the package functions it names itself."""
    tree = ast.parse(source)
    symbols = _symbols(tree, _module_of(path), False)
    return {
        f"{path}::{node.name}": graph.references(node, symbols, None)
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
    }


def difficulty_of(distance: int) -> Difficulty:
    return "easy" if distance == 0 else "medium" if distance == 1 else "hard"


def module_count(task: RepoTask) -> int:
    """How many modules (not ``__init__.py``, not tests) the task's package has: a difficulty knob."""
    return sum(
        1
        for path in task.files
        if path.endswith(".py") and not path.startswith("tests/") and not path.endswith("__init__.py")
    )


def _stable_hash(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def _run_child(
    root: Path, tests: list[str], probe: list[str], evaluate: list[tuple[str, str]], timeout_s: float
) -> dict[str, Any] | None:
    """Run ``testrun`` in a fresh interpreter on the repository at ``root``; None if it hangs or dies."""
    request = {
        "root": str(root),
        "tests": tests,
        "probe": probe,
        "evaluate": evaluate,
        "timeout": timeout_s / 4,
    }
    out = root.parent / f"{root.name}.json"
    env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, str(_TESTRUN), str(out)],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            cwd=root,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode != 0 or not out.is_file():
        log.debug("test run crashed", root=str(root), stderr=proc.stderr[-500:])
        return None
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    out.unlink()
    return result


def _write(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def _diff(path: str, old: str, new: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=f"a/{path}", tofile=f"b/{path}"
    )
    return f"diff --git a/{path} b/{path}\n" + "".join(lines)


def _test_patch(hidden: dict[str, str]) -> str:
    parts = []
    for path, text in sorted(hidden.items()):
        lines = difflib.unified_diff(
            [], text.splitlines(keepends=True), fromfile="/dev/null", tofile=f"b/{path}"
        )
        parts.append(f"diff --git a/{path} b/{path}\nnew file mode 100644\n" + "".join(lines))
    return "".join(parts)


@dataclass(frozen=True)
class _Candidate:
    module_path: str
    mutation: Mutation
    index: int  # the mutation's place among its function's mutations of its kind
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    distance: int
    probe: dict[str, Any] | None
    named: FunctionId  # the function the issue is about when no call could be shown


def _type_invalid(results: dict[str, dict[str, Any]], failing: list[str]) -> bool:
    """Whether the swapped operator is not defined for its operands (``str - str``): a bug no one writes."""
    errors = [str(results.get(t, {}).get("error", "")) for t in failing]
    return any(
        e.startswith(("TypeError: unsupported operand type", "TypeError: bad operand type")) for e in errors
    )


def _round_robin(mutations: list[Mutation], start: int) -> list[tuple[Mutation, int]]:
    """Mutations interleaved by kind, beginning at kind ``start``, each with its index within its kind."""
    by_kind: dict[str, list[Mutation]] = {k: [] for k in MUTATION_KINDS}
    for mutation in mutations:
        by_kind[mutation.kind].append(mutation)
    kinds = [*MUTATION_KINDS[start:], *MUTATION_KINDS[:start]]
    out: list[tuple[Mutation, int]] = []
    for index in range(max((len(v) for v in by_kind.values()), default=0)):
        out += [(by_kind[k][index], index) for k in kinds if index < len(by_kind[k])]
    return out


class _Builder:
    def __init__(self, template: Template, work: Path, timeout_s: float):
        self.template = template
        self.work = work
        self.timeout_s = timeout_s
        self.graph = CallGraph(template)
        self.original = {**template.snapshot(), **template.hidden}
        self.test_paths = [*template.tests, *template.hidden]
        self.references: dict[str, list[FunctionId]] = {}
        self.test_symbols: dict[str, _Symbols] = {}
        for path, text in template.hidden.items():
            self.references.update(direct_references(self.graph, path, text))
            self.test_symbols[path] = _symbols(ast.parse(text), _module_of(path), False)
        self.function_names = sorted({name for _, name in self.graph.order})

    def check_original(self) -> list[str]:
        """The hidden tests, in order; every test must pass on the template as it is."""
        root = self.work / "original"
        _write(root, self.original)
        result = _run_child(root, self.test_paths, [], [], self.timeout_s)
        if result is None:
            raise TemplateError(f"{self.template.root}: the tests hang or crash the runner on the original")
        failed = [f"{t} ({r.get('error')})" for t, r in result["results"].items() if not r["passed"]]
        if failed:
            raise TemplateError(f"{self.template.root}: tests fail on the original: {', '.join(failed)}")
        return [t for t in result["results"] if t.split("::")[0] in self.template.hidden]

    def candidates(
        self, module_path: str, function: str, hidden: list[str], limit: int, issue_from: IssueFrom
    ) -> list[_Candidate]:
        mutations = enumerate_mutations(self.template.modules[module_path], function, self.function_names)
        start = _stable_hash(f"{self.template.name}::{function}") % len(MUTATION_KINDS)
        target = (_module_of(module_path), function)
        order = hidden
        if issue_from == "farthest":
            reach = {t: self.graph.distance(self.references.get(t, []), target) for t in hidden}

            def rank(test: str) -> int:
                steps = reach[test]
                return 1 if steps is None else -steps  # farthest first; one never reaching the bug last

            order = sorted(hidden, key=rank)
        kept: list[_Candidate] = []
        for number, (mutation, index) in enumerate(_round_robin(mutations, start)):
            if len(kept) >= limit:
                break
            root = self.work / f"{module_path.replace('/', '.')}.{function}.{number}"
            _write(root, {**self.original, module_path: mutation.new_source})
            result = _run_child(root, self.test_paths, order, [], self.timeout_s)
            if result is None:
                log.debug(
                    "mutant hangs or crashes the runner", function=function, mutation=mutation.description
                )
                continue
            results = result["results"]
            if any(
                str(r.get("error", "")).startswith(testrun.TestTimeout.__name__) for r in results.values()
            ):
                continue
            failing = [t for t in hidden if not results.get(t, {"passed": False})["passed"]]
            if not failing or (mutation.kind == "operator_swap" and _type_invalid(results, failing)):
                continue
            probe = result.get("probe")
            named = self._named(probe, next(t for t in order if t in failing))
            distance = self.graph.distance(named, target)
            if distance is None:
                log.debug("no call path from the issue's call to the bug", function=function)
                continue
            nearest = min(named, key=lambda f: (self.graph.distance([f], target) is None, named.index(f)))
            kept.append(
                _Candidate(
                    module_path,
                    mutation,
                    index,
                    failing,
                    [t for t in hidden if t not in failing],
                    distance,
                    probe,
                    nearest,
                )
            )
        return kept

    def _named(self, probe: dict[str, Any] | None, first_failing: str) -> list[FunctionId]:
        """The package functions the issue names: those in the probed call, or else those the first
        failing test calls itself."""
        if probe is not None:
            path = probe["test"].split("::")[0]
            expression = ast.parse(probe["expression"], mode="eval")
            named = self.graph.references(expression, self.test_symbols[path], None)
            if named:
                return named
        return self.references.get(first_failing, [])

    def expected(self, probes: list[tuple[str, str]]) -> list[dict[str, str]]:
        """What each ``(test file, expression)`` gives on the original repository."""
        if not probes:
            return []
        result = _run_child(self.work / "original", [], [], probes, self.timeout_s * 4)
        if result is None:
            raise TemplateError(f"{self.template.root}: evaluating the issues' calls hung on the original")
        values: list[dict[str, str]] = result["values"]
        return values


def _public_functions(template: Template) -> list[tuple[str, str]]:
    out = []
    for path, text in template.modules.items():
        for node in ast.parse(text).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith("_"):
                out.append((path, node.name))
    return out


def build_candidates(
    template: Template,
    max_per_function: int = 3,
    timeout_s: float = 10,
    workers: int | None = None,
    issue_from: IssueFrom = "first",
) -> list[RepoTask]:
    """Every kept mutant of every public function of ``template`` as a task (at most ``max_per_function``
    per function, kinds interleaved). ``timeout_s`` bounds one run of the repository's tests.

    The issue describes the first failing hidden test (in file order) that shows a standalone call, or with
    ``issue_from="farthest"`` the failing test whose own calls are farthest from the bug, which makes
    medium and hard tasks (the bug below the function the issue is about) more common."""
    workers = workers or min(4, os.cpu_count() or 1)
    with tempfile.TemporaryDirectory(prefix=f"minirepo-{template.name}-") as work:
        builder = _Builder(template, Path(work), timeout_s)
        hidden = builder.check_original()
        functions = _public_functions(template)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            found = list(
                pool.map(
                    lambda f: builder.candidates(f[0], f[1], hidden, max_per_function, issue_from), functions
                )
            )
        candidates = [c for group in found for c in group]
        usable = [c.probe if c.probe and "assert" not in c.probe["expression"] else None for c in candidates]
        asked = [(p["test"].split("::")[0], p["expression"]) for p in usable if p]
        answers = iter(builder.expected(asked))
        expected = [next(answers) if p else None for p in usable]
    return [_task(template, c, p, e) for c, p, e in zip(candidates, usable, expected, strict=True)]


def _task(
    template: Template,
    candidate: _Candidate,
    probe: dict[str, Any] | None,
    expected: dict[str, str] | None,
) -> RepoTask:
    mutation = candidate.mutation
    module = Path(candidate.module_path).stem
    instance_id = f"{template.name}__{module}__{mutation.function}__{mutation.kind}_{candidate.index}"
    files = {**template.snapshot(), candidate.module_path: mutation.new_source}
    original = template.modules[candidate.module_path]
    task = RepoTask(
        instance_id=instance_id,
        repo=f"minirepo/{template.name}",
        problem_statement=problem_statement(instance_id, probe, expected, candidate.named),
        patch=_diff(candidate.module_path, mutation.new_source, original),
        test_patch=_test_patch(template.hidden),
        FAIL_TO_PASS=candidate.fail_to_pass,
        PASS_TO_PASS=candidate.pass_to_pass,
        files=files,
        source="minirepo",
        difficulty=difficulty_of(candidate.distance),
        bug_kind=mutation.kind,
        distance=candidate.distance,
    )
    if apply_patch(task.files, task.patch) != template.snapshot() or task.hidden_files() != template.hidden:
        raise TemplateError(
            f"{instance_id}: the patches do not restore the template (a file without a newline?)"
        )
    return task


def _shown(outcome: dict[str, str]) -> str:
    return f"raises {outcome['raised']}" if "raised" in outcome else f"returns {outcome['value']}"


_RETURNS = (
    "`{expr}` {actual} but should return {value}.",
    "Calling `{expr}` gives the wrong answer: it {actual}, and I expected {value}.",
    "Wrong result: `{expr}` {actual}; the correct result is {value}.",
)
_RAISES = (
    "`{expr}` should raise {kind} but {actual}.",
    "I expected `{expr}` to raise {kind}, but it {actual}.",
    "`{expr}` {actual} instead of raising {kind}.",
)
_VAGUE = (
    "`{function}` gives wrong results for some inputs.",
    "Something is off with `{function}`: for some inputs its result is wrong.",
    "`{function}` misbehaves on some inputs; results that used to be right are now wrong.",
)
_WHERE = (
    "`{function}` is defined in `{module}`.",
    "The function lives in the `{module}` module.",
    "(`{function}` comes from `{module}`.)",
)


def problem_statement(
    instance_id: str, probe: dict[str, Any] | None, expected: dict[str, str] | None, named: FunctionId
) -> str:
    """An issue as a user would file it: the call that misbehaves, what it gave and what it should give
    (the original's result), and the called function's module. Without a usable probe (no standalone call,
    or the same result on both) the issue names the function the failing test uses and stays vague."""
    variant = _stable_hash(instance_id) % 3
    module, function = named
    sentence = _VAGUE[variant].format(function=function)
    if probe is not None and expected is not None:
        actual = probe["outcome"]
        module, function = probe["module"], probe["function"]
        fields = {"expr": probe["expression"], "actual": _shown(actual)}
        if "value" in expected and actual != expected:
            sentence = _RETURNS[variant].format(value=expected["value"], **fields)
        elif "raised" in expected and actual.get("type") != expected["type"]:
            sentence = _RAISES[variant].format(kind=expected["type"], **fields)
        else:
            sentence = _VAGUE[variant].format(function=function)
    return f"{sentence} {_WHERE[(variant + 1) % 3].format(function=function, module=module)}"


def _group(task: RepoTask) -> str:
    """``template::function``: tasks with a bug in the same function share a split."""
    parts = task.instance_id.split("__")
    return f"{parts[0]}::{'__'.join(parts[2:-1])}"


def _fingerprint(files: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode("utf-8")).hexdigest()


def split_tasks(
    tasks: Sequence[RepoTask], sizes: tuple[int, int, int] = (200, 50, 50)
) -> dict[str, list[RepoTask]]:
    """Train, validation and test sets. Duplicates (the same mutated snapshot or the same patch) are
    dropped first; then whole ``(template, function)`` groups go, in hash order, to the split furthest
    below its share of ``sizes``; a split over its size keeps the tasks of most groups (first each
    group's first task, then second ones...)."""
    if len(sizes) != len(SPLITS) or any(s < 0 for s in sizes) or not any(sizes):
        raise ValueError(f"sizes must be three non-negative counts, not all zero; got {sizes}")
    seen: set[str] = set()
    unique: list[RepoTask] = []
    for task in sorted(tasks, key=lambda t: t.instance_id):
        keys = {"files:" + _fingerprint(task.files), "patch:" + task.patch}
        if keys & seen:
            continue
        seen |= keys
        unique.append(task)
    groups: dict[str, list[RepoTask]] = {}
    for task in unique:
        groups.setdefault(_group(task), []).append(task)
    assigned: dict[str, list[list[RepoTask]]] = {s: [] for s in SPLITS}
    counts = dict.fromkeys(SPLITS, 0)
    for key in sorted(groups, key=lambda k: (_stable_hash(k), k)):
        split = min(
            (s for s, size in zip(SPLITS, sizes, strict=True) if size),
            key=lambda s: counts[s] / sizes[SPLITS.index(s)],
        )
        assigned[split].append(groups[key])
        counts[split] += len(groups[key])
    out: dict[str, list[RepoTask]] = {}
    for split, size in zip(SPLITS, sizes, strict=True):
        ranked = sorted(
            (
                (rank, _stable_hash(t.instance_id), t)
                for group in assigned[split]
                for rank, t in enumerate(group)
            ),
            key=lambda item: (item[0], item[1], item[2].instance_id),
        )
        out[split] = sorted((t for _, _, t in ranked[:size]), key=lambda t: t.instance_id)
    return out


__all__ = [
    "CallGraph",
    "IssueFrom",
    "Template",
    "TemplateError",
    "build_candidates",
    "difficulty_of",
    "direct_references",
    "load_template",
    "module_count",
    "problem_statement",
    "split_tasks",
]
