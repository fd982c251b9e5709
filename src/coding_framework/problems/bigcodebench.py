"""BigCodeBench (Zhuo et al. 2024): practical tasks graded by a ``unittest`` ``TestCases`` class.

Sources for :func:`load_bigcodebench`:

- a local release file (``.jsonl`` / ``.jsonl.gz``) or a folder holding one (``BigCodeBench.jsonl(.gz)``,
  or the single ``*.jsonl(.gz)`` file in it);
- ``"hf"`` or ``"hf:<dataset>"``: the Hugging Face hub (default dataset ``bigcode/bigcodebench``, its newest
  version split).

The split picks the prompt: ``complete`` gives the code prompt a completion continues, ``instruct`` the
natural-language instruction. Either way the tests, the reference solution and ``code_prompt`` (which the
official harness runs before every solution) are the same.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Literal

from coding_framework.problems._io import (
    ProblemLoadError,
    Record,
    check_unique,
    hub_records,
    local_path,
    read_records,
)
from coding_framework.problems.humaneval import solution_difficulty
from coding_framework.problems.problem import Problem

HUB_DATASET = "bigcode/bigcodebench"
_FILE_NAMES = ("BigCodeBench.jsonl.gz", "BigCodeBench.jsonl")
Split = Literal["complete", "instruct"]


def load_bigcodebench(source: str | Path | None, split: Split = "complete") -> list[Problem]:
    """The BigCodeBench tasks from ``source`` (see the module docstring), in file order."""
    if source is None:
        raise ProblemLoadError(
            "bigcodebench has no bundled copy: pass a release file (BigCodeBench.jsonl.gz) or 'hf'"
        )
    if isinstance(source, str) and (source == "hf" or source.startswith("hf:")):
        dataset = source.partition(":")[2] or HUB_DATASET
        records = hub_records(dataset, None, "BigCodeBench.jsonl.gz")
    else:
        path = local_path(source)
        records = read_records(_release_file(path) if path.is_dir() else path)
    problems = [bigcodebench_problem(r, split) for r in records]
    check_unique(problems, records)
    return problems


def _release_file(folder: Path) -> Path:
    for name in _FILE_NAMES:
        if (folder / name).is_file():
            return folder / name
    found = sorted(p for p in folder.iterdir() if p.name.endswith((".jsonl", ".jsonl.gz")))
    if len(found) == 1:
        return found[0]
    raise ProblemLoadError(
        f"{folder}: expected BigCodeBench.jsonl(.gz) or exactly one .jsonl(.gz) file, found {len(found)}"
    )


def bigcodebench_problem(record: Record, split: Split) -> Problem:
    """Map one BigCodeBench release record to a :class:`Problem` (``test_format="unittest"``)."""
    task_id = record.field("task_id")
    complete = record.field("complete_prompt")
    instruct = record.field("instruct_prompt")
    canonical = record.field("canonical_solution")
    test = record.field("test")
    code_prompt = record.field("code_prompt")
    libs = _libs(record)
    calibrated = code_prompt + "\n    pass\n"
    for name, code in (("complete_prompt", complete), ("test", test), ("code_prompt", calibrated)):
        try:
            ast.parse(code)
        except SyntaxError as exc:
            raise ProblemLoadError(
                f"{record.where}: the {name} of {task_id} is not valid Python: {exc}"
            ) from exc
    if "class TestCases" not in test:
        raise ProblemLoadError(f"{record.where}: the test of {task_id} defines no `TestCases` class")
    try:
        return Problem(
            task_id=task_id,
            prompt=complete if split == "complete" else instruct,
            entry_point=record.field("entry_point"),
            test_code=test,
            test_format="unittest",
            solutions=[complete + canonical],
            description=doc_description(record) or instruct,
            difficulty=solution_difficulty(canonical),
            tags=libs,
            source="bigcodebench",
            prompt_is_code=split == "complete",
            code_prompt=code_prompt,
        )
    except ValueError as exc:
        raise ProblemLoadError(f"{record.where}: invalid problem {task_id}: {exc}") from exc


def _libs(record: Record) -> list[str]:
    """The ``libs`` field: a list, or the release's string form of one (``"['numpy', 'pandas']"``)."""
    raw = record.field("libs", (str, list))
    if isinstance(raw, str):
        try:
            raw = ast.literal_eval(raw) if raw.strip() else []
        except (ValueError, SyntaxError):
            raw = None
    if not isinstance(raw, list) or not all(isinstance(lib, str) for lib in raw):
        raise ProblemLoadError(f"{record.where}: field 'libs' must be a list of library names")
    return list(raw)


def doc_description(record: Record) -> str:
    """The plain description from ``doc_struct`` (a JSON string), or "" when it has none."""
    try:
        doc = json.loads(record.field("doc_struct"))
    except json.JSONDecodeError as exc:
        raise ProblemLoadError(f"{record.where}: field 'doc_struct' is not valid JSON: {exc.msg}") from exc
    lines = doc.get("description", []) if isinstance(doc, dict) else []
    return "\n".join(line for line in lines if isinstance(line, str))
