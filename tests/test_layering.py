"""Dependencies point one way. From the bottom: config, logs and the registry helper; problems; repository
tasks; sandbox; grading; rewards, embedded and the repository workspace; models; llm; agents; graphs;
evaluation; training, serving and curation; supervisor; cli; and `testing`, the fakes tests and benchmarks
share, above all so that no product module can import one. A module may import its own package or a lower
layer. An upward import fails here, and so do an import between two packages of one layer (they need a lower
home for what they share), an import of a `coding_framework` module that is missing from the table, and any
circle of imports between modules.

Inside `training` the same rule holds between its parts (`TRAINING_LAYERS`), from the bottom: the
trajectory row type; the pure algorithms (`algos`); where batches come from (`rollouts`); what a run starts
from, records and leaves (`run`); the auditor and the padded batch; the update and the reviewer's warm
start; the role policies; the loops (`trainer`, `verl`); what drives a loop (`quickstart`, `sweep`); and
`pyfunc`, the old home of the registered model's class, kept for the models pickled there.

The sandbox judge runs inside the sandbox, where only the standard library and its sibling modules exist.
The bottom packages stay light: none imports torch, verl, transformers or langgraph."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import coding_framework

PACKAGE = Path(coding_framework.__file__).parent
ROOT = "coding_framework"
LAYERS = {
    "config": 0, "logs": 0, "registry": 0,
    "problems": 1,
    "repotasks": 2,
    "sandbox": 3,
    "grading": 4,
    "rewards": 5, "embedded": 5, "workspace": 5,
    "models": 6,
    "llm": 7,
    "agents": 8,
    "graphs": 9,
    "evaluation": 10,
    "curation": 11, "serving": 11, "training": 11,
    "supervisor": 12,
    "cli": 13,
    "testing": 14,
}
TRAINING = f"{ROOT}.training"
TRAINING_LAYERS = {
    "trajectory": 0,
    "algos": 1,
    "rollouts": 2,
    "run": 3,
    "auditor": 4, "batch": 4, "sft": 4,
    "generator_sft": 5, "repository_sft": 5, "review_sft": 5, "update": 5,
    "role_policies": 6,
    "trainer": 7, "verl": 7,
    "quickstart": 8, "sweep": 8,
    "pyfunc": 9,
}
JUDGE = f"{ROOT}.sandbox.judge"
LIGHT = ("config", "problems", "repotasks", "sandbox", "grading")
HEAVY = ("torch", "verl", "transformers", "langgraph")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package_of(path: Path) -> str:
    name = _module_name(path)
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def imports(source: str, package: str) -> list[tuple[str, bool]]:
    """Absolute names of what `source`, a module of `package`, imports; each with whether it was written
    as a relative import.

    `from a import b` yields `a.b`: `b` may be a submodule, and for `from coding_framework import x` the
    submodule is what decides the layer."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(alias.name, False) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = importlib.util.resolve_name("." * node.level + base, package)
            found += [(f"{base}.{alias.name}", node.level > 0) for alias in node.names]
    return found


def _top(name: str) -> str | None:
    """The top-level part of the package a dotted name lies in (`coding_framework.llm.base` -> `llm`)."""
    parts = name.split(".")
    return parts[1] if parts[0] == ROOT and len(parts) > 1 else None


def _training_part(name: str) -> str | None:
    """The part of `training` a dotted name lies in (`coding_framework.training.algos.kl` -> `algos`); None
    outside `training` and for the package itself."""
    parts = name.split(".")
    return parts[2] if parts[:2] == TRAINING.split(".") and len(parts) > 2 else None


def _imports_of(path: Path) -> list[tuple[str, bool]]:
    return imports(path.read_text(), _package_of(path))


def _sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_resolves_relative_imports() -> None:
    source = "from . import wire\nfrom ..pool import Sandbox\nfrom ... import graphs\nimport os.path\n"
    assert imports(source, JUDGE) == [
        (f"{JUDGE}.wire", True),
        (f"{ROOT}.sandbox.pool.Sandbox", True),
        (f"{ROOT}.graphs", True),
        ("os.path", False),
    ]
    assert _package_of(PACKAGE / "sandbox" / "__init__.py") == f"{ROOT}.sandbox"
    assert _package_of(PACKAGE / "sandbox" / "pool.py") == f"{ROOT}.sandbox"


def test_layer_table_is_exact() -> None:
    tops = {_top(_module_name(p)) for p in _sources()} - {None}
    missing, stale = sorted(tops - set(LAYERS)), sorted(set(LAYERS) - tops)
    assert tops == set(LAYERS), f"add to LAYERS: {missing}; drop from LAYERS: {stale}"


def layer_violations(
    imports_by_module: dict[str, list[str]], part_of: Callable[[str], str | None], layers: dict[str, int],
    prefix: str,
) -> list[str]:
    """Each import, of `imports_by_module` (module -> what it imports), from one part to another (`part_of`
    a dotted name, None where the rule does not apply) that `layers` forbids: upward, between two parts of
    one layer, or into a part that has no layer."""
    bad = []
    for module, names in imports_by_module.items():
        src = part_of(module)
        if src is None:
            continue
        for name in names:
            dst = part_of(name)
            if dst is None or dst == src:
                continue
            if dst not in layers:
                bad.append(f"{module} imports {prefix}.{dst}, which has no layer")
            elif layers[dst] > layers[src]:
                bad.append(f"{module} imports {prefix}.{dst} (layer {layers[dst]}) from layer {layers[src]}")
            elif layers[dst] == layers[src]:
                bad.append(f"{module} imports {prefix}.{dst}, a part of its own layer {layers[src]}")
    return bad


def _all_imports() -> dict[str, list[str]]:
    return {_module_name(p): [name for name, _ in _imports_of(p)] for p in _sources()}


def test_no_upward_or_unknown_imports() -> None:
    assert layer_violations(_all_imports(), _top, LAYERS, ROOT) == []


def test_training_layer_table_is_exact() -> None:
    parts = {_training_part(_module_name(p)) for p in _sources()} - {None}
    missing, stale = sorted(parts - set(TRAINING_LAYERS)), sorted(set(TRAINING_LAYERS) - parts)
    assert parts == set(TRAINING_LAYERS), f"add to TRAINING_LAYERS: {missing}; drop from it: {stale}"


def test_no_upward_or_unknown_imports_inside_training() -> None:
    assert layer_violations(_all_imports(), _training_part, TRAINING_LAYERS, TRAINING) == []


def test_an_import_against_the_training_table_is_found() -> None:
    imports = {
        f"{TRAINING}.algos.kl": [f"{TRAINING}.trajectory.Trajectory", "torch"],  # down: allowed
        f"{TRAINING}.algos.seeds": [f"{TRAINING}.run.setup.configure"],  # up
        f"{TRAINING}.trainer": [f"{TRAINING}.verl.run"],  # across one layer
        f"{TRAINING}.run.setup": [f"{TRAINING}.helpers"],  # no layer
    }
    assert layer_violations(imports, _training_part, TRAINING_LAYERS, TRAINING) == [
        f"{TRAINING}.algos.seeds imports {TRAINING}.run (layer 3) from layer 1",
        f"{TRAINING}.trainer imports {TRAINING}.verl, a part of its own layer 7",
        f"{TRAINING}.run.setup imports {TRAINING}.helpers, which has no layer",
    ]


def _module_graph() -> dict[str, set[str]]:
    """Module -> the `coding_framework` modules it imports (anywhere in it, lazily or for type checking)."""
    modules = {_module_name(p): p for p in _sources()}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found = set()
        for target, _ in _imports_of(path):
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
        graph[name] = found
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return circles


def test_import_circles_are_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert import_circles(graph) == [["a", "b", "c"]]


def test_no_import_circles() -> None:
    assert import_circles(_module_graph()) == []


def test_judge_imports_only_the_standard_library() -> None:
    bad = []
    for path in sorted((PACKAGE / "sandbox" / "judge").rglob("*.py")):
        for name, relative in _imports_of(path):
            sibling = relative and name.startswith(f"{JUDGE}.")
            if not sibling and name.split(".")[0] not in sys.stdlib_module_names:
                bad.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert bad == []


def test_light_packages_never_import_heavy_libraries() -> None:
    bad = []
    for package in LIGHT:
        for path in sorted((PACKAGE / package).rglob("*.py")):
            bad += [
                f"{path.relative_to(PACKAGE)} imports {name}"
                for name, _ in _imports_of(path)
                if name.split(".")[0] in HEAVY
            ]
    assert bad == []


def test_importing_light_packages_loads_no_heavy_library() -> None:
    code = (
        "import sys\n"
        + "".join(f"import {ROOT}.{package}\n" for package in LIGHT)
        + f"print(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
