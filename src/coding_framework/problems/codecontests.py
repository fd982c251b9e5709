"""CodeContests (Li et al. 2022, AlphaCode): competitive programming problems with stdin/stdout tests.

Sources for :func:`load_codecontests`: a local ``.jsonl(.gz)``/``.json`` or ``.parquet`` file of the
``deepmind/code_contests`` rows, or a folder holding ``code_contests_{train,valid,test}.*`` files, or
``"hf"`` / ``"hf:<dataset>"`` for the Hugging Face hub. Each row has ``name``, ``description``,
``public_tests``/``private_tests``/``generated_tests`` (``{"input": [...], "output": [...]}``),
``solutions`` (``{"language": [...], "solution": [...]}``), ``time_limit`` (``{"seconds", "nanos"}``),
``memory_limit_bytes``, ``difficulty`` and ``cf_rating``.

A problem's tests are all three sets (public, private, generated), as in AlphaCode's evaluation. Output is
compared token-wise with float tolerance :data:`FLOAT_TOLERANCE` (see ``sandbox/judge/stdio.py``). Each
test's CPU limit is the problem's own limit times :data:`TIME_FACTOR` of the submission's language.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from coding_framework.problems._io import (
    ProblemLoadError,
    Record,
    check_unique,
    hub_records,
    local_path,
    read_records,
)
from coding_framework.problems.problem import Difficulty, Problem

HUB_DATASET = "deepmind/code_contests"
SPLITS = ("train", "valid", "test")
FLOAT_TOLERANCE = 1e-5
TIME_FACTOR = {"python": 4.0, "cpp": 2.0}
"""CPU limit per test = the problem's limit x this factor (Python is slower than the C++ limits assume)."""
DEFAULT_TIME_LIMIT_S = 2.0
PYTHON3 = 3  # the dataset's language enum: 1 PYTHON (2), 2 CPP, 3 PYTHON3, 4 JAVA
# Release file names (code_contests_test.*), then the hub's parquet shards (data/test-00000-of-1.parquet).
_FILE_GLOBS = ("code_contests_{split}*", "{split}-*.parquet", "data/{split}-*.parquet")


def load_codecontests(source: str | Path | None, split: str = "all") -> list[Problem]:
    """The problems of ``split`` (train, valid, test or all) from ``source`` (see the module docstring)."""
    if split not in ("all", *SPLITS):
        raise ProblemLoadError(f"codecontests has no split {split!r}; choose one of all, {', '.join(SPLITS)}")
    if source is None or (isinstance(source, str) and (source == "hf" or source.startswith("hf:"))):
        dataset = (source or "").partition(":")[2] or HUB_DATASET
        records = [r for r in hub_records(dataset, None, "code_contests_test.jsonl") if _in_split(r, split)]
    else:
        records = _local_records(local_path(source), split)
    problems = [codecontests_problem(r) for r in records]
    check_unique(problems, records)
    return problems


def _in_split(record: Record, split: str) -> bool:
    name = record.where.split("/")[-1].split("#")[0]
    return split == "all" or name == split


def _local_records(path: Path, split: str) -> list[Record]:
    if path.is_file():
        return _read(path)
    wanted = SPLITS if split == "all" else (split,)
    files = sorted(
        f for s in wanted for g in _FILE_GLOBS for f in path.glob(g.format(split=s)) if f.is_file()
    )
    if not files:
        names = ", ".join(g.format(split=s) for s in wanted for g in _FILE_GLOBS)
        raise ProblemLoadError(f"{path}: no CodeContests file found; expected {names} (.jsonl or .parquet)")
    return [r for f in files for r in _read(f)]


def _read(path: Path) -> list[Record]:
    if path.suffix != ".parquet":
        return read_records(path)
    import pyarrow.parquet as pq

    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as exc:  # pyarrow raises its own error types for unreadable files
        raise ProblemLoadError(f"{path}: cannot read the parquet file: {exc}") from exc
    if not rows:
        raise ProblemLoadError(f"{path}: the file holds no records")
    return [Record(row, f"{path}#row{i}") for i, row in enumerate(rows)]


def _tests(record: Record, key: str) -> list[list[str]]:
    tests = record.data.get(key)
    if tests is None:
        return []
    inputs = tests.get("input") if isinstance(tests, dict) else None
    outputs = tests.get("output") if isinstance(tests, dict) else None
    if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs):
        raise ProblemLoadError(
            f"{record.where}: field {key!r} should be {{'input': [...], 'output': [...]}} of equal length"
        )
    if not all(isinstance(x, str) for x in inputs + outputs):
        raise ProblemLoadError(f"{record.where}: field {key!r} holds a non-string input or output")
    return [[i, o] for i, o in zip(inputs, outputs, strict=True)]


def _time_limit(record: Record) -> float:
    limit: Any = record.data.get("time_limit")
    if limit is None:
        return DEFAULT_TIME_LIMIT_S
    if not isinstance(limit, dict):
        raise ProblemLoadError(f"{record.where}: field 'time_limit' should be {{'seconds', 'nanos'}}")
    seconds = (limit.get("seconds") or 0) + (limit.get("nanos") or 0) / 1e9
    return float(seconds) if seconds > 0 else DEFAULT_TIME_LIMIT_S


def _python_solutions(record: Record) -> list[str]:
    sols = record.data.get("solutions") or {}
    langs, codes = sols.get("language", []), sols.get("solution", [])
    return [c for lang, c in zip(langs, codes, strict=False) if lang == PYTHON3 and isinstance(c, str)]


def codecontests_problem(record: Record) -> Problem:
    """Map one ``deepmind/code_contests`` row to a stdin/stdout :class:`Problem`."""
    name = record.field("name")
    description = record.field("description")
    tests = [t for key in ("public_tests", "private_tests", "generated_tests") for t in _tests(record, key)]
    if not tests:
        raise ProblemLoadError(f"{record.where}: problem {name!r} has no tests")
    limit = _time_limit(record)
    memory = record.data.get("memory_limit_bytes") or 0
    spec = {
        "tests": tests,
        "time_limit_s": limit,
        "time_factor": TIME_FACTOR,
        "memory_bytes": int(memory),
        "float_tolerance": FLOAT_TOLERANCE,
    }
    per_test_wall = limit * max(TIME_FACTOR.values()) * 2.0 + 1.5
    try:
        return Problem(
            task_id=name,
            prompt=description,
            entry_point="main",
            test_code=json.dumps(spec),
            test_format="stdio",
            solutions=_python_solutions(record),
            description=description,
            difficulty=_difficulty(record),
            tags=[f"cf_rating:{record.data['cf_rating']}"] if record.data.get("cf_rating") else [],
            source="codecontests",
            prompt_is_code=False,
            timeout_s=min(3600.0, per_test_wall * len(tests) + 5.0),
        )
    except ValueError as exc:
        raise ProblemLoadError(f"{record.where}: invalid problem {name!r}: {exc}") from exc


def _difficulty(record: Record) -> Difficulty:
    """Codeforces rating when known (<1400 easy, <2000 medium), else the dataset's difficulty enum."""
    rating = record.data.get("cf_rating") or 0
    if rating:
        return "easy" if rating < 1400 else "medium" if rating < 2000 else "hard"
    level = record.data.get("difficulty") or 0
    return "easy" if level in (1, 7, 8) else "hard" if level in (3, 4, 5) or level >= 10 else "medium"
