"""Problems as JSON lines: one ``Problem`` record per line, written by ``coding-framework data`` and read back
by ``load_benchmark("jsonl", path)``."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from pydantic import ValidationError

from coding_framework.problems._io import ProblemLoadError, check_unique, local_path, read_records
from coding_framework.problems.problem import Problem


def load_problem_records(source: str | Path) -> list[Problem]:
    """The problems of a ``.jsonl`` (``.jsonl.gz``, ``.json``) file of ``Problem`` records, in file order."""
    records = read_records(local_path(source))
    problems = []
    for record in records:
        try:
            problems.append(Problem.model_validate(record.data))
        except ValidationError as exc:
            fields = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or '<root>'}: {e['msg']}" for e in exc.errors()
            )
            raise ProblemLoadError(f"{record.where}: not a problem record: {fields}") from None
    check_unique(problems, records)
    return problems


def write_problem_records(problems: Iterable[Problem], path: str | Path) -> Path:
    """Write one JSON ``Problem`` record per line (parents created); returns the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        for problem in problems:
            fh.write(json.dumps(problem.model_dump(mode="json")) + "\n")
    return out
