"""Dependencies point one way: cli/serving -> training/evaluation -> graphs -> agents -> llm -> rewards
-> grading -> problems, sandbox -> config. An upward import fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import coding_framework

PACKAGE = Path(coding_framework.__file__).parent
LAYERS = {
    "config": 0, "logs": 0,
    "sandbox": 1, "problems": 1,
    "grading": 2,
    "rewards": 3, "embedded": 3,
    "llm": 4,
    "agents": 5,
    "graphs": 6,
    "evaluation": 7, "training": 7,
    "supervisor": 8,
    "serving": 9, "cli": 9,
}


def _top(path: Path) -> str:
    rel = path.relative_to(PACKAGE).parts
    return rel[0].removesuffix(".py")


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "coding_framework" and len(parts) > 1:
                found.add(parts[1])
    return found


def test_every_package_has_a_layer():
    tops = {_top(p) for p in PACKAGE.rglob("*.py")} - {"__init__"}
    assert tops <= set(LAYERS), f"place these in LAYERS: {sorted(tops - set(LAYERS))}"


def test_no_upward_imports():
    upward = []
    for path in PACKAGE.rglob("*.py"):
        src = _top(path)
        if src == "__init__":
            continue
        for dst in _imports(path) - {src}:
            if LAYERS.get(dst, -1) > LAYERS[src]:
                upward.append(f"{path.relative_to(PACKAGE)} imports coding_framework.{dst}")
    assert upward == []
