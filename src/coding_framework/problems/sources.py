"""Where problems come from, written one way: a source is ``NAME``, ``NAME:SPLIT`` (a registered benchmark
and one of its splits) or a path to a ``.jsonl`` / ``.jsonl.gz`` of problem records (what ``data`` writes).

``load_source`` resolves a benchmark's files as ``evaluate`` does (``resolve_source``: an explicit path, a
file under ``$CODING_FRAMEWORK_DATA_DIR``, else the benchmark's own default), so training, evaluation while
training and ``data decontaminate`` read the same problems a user evaluates on.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from coding_framework.problems._io import ProblemLoadError
from coding_framework.problems.benchmarks import BENCHMARKS, load_benchmark
from coding_framework.problems.problem import Problem
from coding_framework.problems.records import load_problem_records

__all__ = ["DATA_DIR_ENV", "ProblemSource", "load_source", "parse_source", "resolve_source"]

DATA_DIR_ENV = "CODING_FRAMEWORK_DATA_DIR"
_DATA_FILES = {
    "humaneval": ("HumanEval.jsonl.gz", "HumanEval.jsonl", "humaneval"),
    "mbpp": ("mbpp.jsonl", "mbpp"),
    "mbpp-sanitized": ("sanitized-mbpp.json", "mbpp"),
    "codecontests": ("code_contests_test.jsonl", "code_contests_test.parquet"),
    "humanevalplus": ("HumanEvalPlus.jsonl.gz", "HumanEvalPlus.jsonl"),
    "mbppplus": ("MbppPlus.jsonl.gz", "MbppPlus.jsonl"),
    "bigcodebench": ("BigCodeBench.jsonl.gz", "BigCodeBench.jsonl"),
}
_RECORD_SUFFIXES = (".jsonl", ".jsonl.gz", ".json")


def resolve_source(benchmark: str, data: str | Path | None) -> str | Path | None:
    """``data`` wins; else a file under $CODING_FRAMEWORK_DATA_DIR; else the benchmark's default source."""
    if data is not None:
        return data
    root = os.environ.get(DATA_DIR_ENV)
    if root:
        for name in _DATA_FILES.get(benchmark, ()):
            for candidate in (Path(root) / name, Path(root) / benchmark / name):
                if candidate.exists():
                    return candidate
    if benchmark.startswith("mbpp"):
        return "hf"
    return None


@dataclass(frozen=True)
class ProblemSource:
    """One parsed source: a benchmark ``name`` and ``split``, or a records ``path``."""

    text: str
    name: str | None = None
    split: str = "all"
    path: Path | None = None

    def __str__(self) -> str:
        return self.text

    @property
    def label(self) -> str:
        """How metrics and reports name it: ``mbpp:test``, ``humaneval``, or the file's name."""
        if self.path is not None:
            return self.path.name
        return self.text


def parse_source(text: str) -> ProblemSource:
    """The ``ProblemSource`` ``text`` names; a ``ProblemLoadError`` (one line) for an unknown name."""
    text = str(text).strip()
    if not text:
        raise ProblemLoadError("a problem source is empty; use NAME, NAME:SPLIT or a .jsonl path")
    if text.endswith(_RECORD_SUFFIXES) or os.sep in text:
        path = Path(text).expanduser()
        if not path.is_file():
            raise ProblemLoadError(f"problem source {text!r}: no such file")
        return ProblemSource(text, path=path)
    name, _, split = text.partition(":")
    if name not in BENCHMARKS:
        raise ProblemLoadError(
            f"unknown problem source {text!r}: use NAME, NAME:SPLIT or a .jsonl path; benchmarks: "
            f"{', '.join(sorted(BENCHMARKS))}"
        )
    return ProblemSource(text, name=name, split=split or "all")


def load_source(source: ProblemSource | str, data: str | Path | None = None) -> list[Problem]:
    """The problems of ``source``, in their order; ``data`` is a benchmark's file (default: as
    ``resolve_source`` finds it). A bad file, record or split is a ``ProblemLoadError`` naming it."""
    spec = parse_source(source) if isinstance(source, str) else source
    try:
        if spec.path is not None:
            return load_problem_records(spec.path)
        assert spec.name is not None
        return load_benchmark(spec.name, resolve_source(spec.name, data), spec.split)
    except ProblemLoadError as exc:
        raise ProblemLoadError(f"problem source {spec.text!r}: {exc}") from None
    except OSError as exc:
        raise ProblemLoadError(f"problem source {spec.text!r}: {exc}") from None
