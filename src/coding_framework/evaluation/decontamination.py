"""Decontamination by behaviour as well as by text: the one check that ``data decontaminate`` and a training
run's data step apply.

The text check (``problems.decontaminate``: exact matches, then n-gram paraphrases) runs first. Words miss
the same task told in other words ("find length of the string" vs HumanEval's ``strlen``), so each pair
that ``behaviour_candidates`` finds among the problems the text check kept is graded both ways: each
problem's first reference solution, its function bound to the other's entry point name, against the other's
tests in the grader. A pair that passes both ways is the same task whatever its words (kind ``behaviour``).
The second direction runs only for pairs that passed the first. Verdicts are cached by a hash of the program
and the tests, in memory and, with a path, in a JSON file, so a rerun grades only what is new.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from coding_framework.grading import Grader
from coding_framework.logs import get_logger
from coding_framework.problems.decontaminate import (
    Contamination,
    DecontaminationSettings,
    behaviour_candidates,
    find_contamination,
)
from coding_framework.problems.problem import Problem

__all__ = ["BehaviourCache", "bound_program", "decontaminate", "same_behaviour"]

log = get_logger(__name__)


def bound_program(src: Problem, dst: Problem) -> str:
    """``src``'s first reference with ``dst``'s entry point name bound to its function. MBPP's entry point is
    the name its asserts call and HumanEval's is its ``entry_point``; both are ``Problem.entry_point``."""
    program = src.solutions[0]
    if src.entry_point == dst.entry_point:
        return program
    return f"{program}\n\n{dst.entry_point} = {src.entry_point}\n"


class BehaviourCache:
    """Grader verdicts (passed or not) by a hash of the program and of the tests it ran against; kept in
    ``path`` (JSON) when one is given, read on construction and written by ``save``."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.verdicts: dict[str, bool] = {}
        if path is not None and path.is_file():
            try:
                self.verdicts = {str(k): bool(v) for k, v in json.loads(path.read_text()).items()}
            except (json.JSONDecodeError, AttributeError) as exc:
                raise ValueError(f"{path} is not a behaviour cache (a JSON object): {exc}; delete it"
                                 ) from None

    @staticmethod
    def key(problem: Problem, program: str) -> str:
        graded = [program, problem.test_code, problem.test_format, problem.entry_point, problem.prelude,
                  str(problem.timeout_s)]
        return hashlib.sha256("\0".join(graded).encode()).hexdigest()

    def save(self) -> None:
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps(self.verdicts, sort_keys=True) + "\n")


def _grade(items: list[tuple[Problem, str]], grader: Grader, cache: BehaviourCache) -> list[bool]:
    keys = [cache.key(problem, program) for problem, program in items]
    todo = {k: item for k, item in zip(keys, items, strict=True) if k not in cache.verdicts}
    if todo:
        results = grader.grade_many(list(todo.values()))
        cache.verdicts.update((k, r.passed) for k, r in zip(todo, results, strict=True))
    return [cache.verdicts[k] for k in keys]


def same_behaviour(pairs: Sequence[tuple[Problem, Problem]], grader: Grader,
                   cache: BehaviourCache | None = None) -> list[bool]:
    """For each pair (a, b): whether a's reference passes b's tests and b's reference passes a's."""
    cache = cache if cache is not None else BehaviourCache()
    forward = _grade([(b, bound_program(a, b)) for a, b in pairs], grader, cache)
    passed = [i for i, ok in enumerate(forward) if ok]
    backward = _grade([(pairs[i][0], bound_program(pairs[i][1], pairs[i][0])) for i in passed], grader, cache)
    both = {i for i, ok in zip(passed, backward, strict=True) if ok}
    return [i in both for i in range(len(pairs))]


def decontaminate(
    train: Sequence[Problem],
    against: Mapping[str, Sequence[Problem]],
    settings: DecontaminationSettings | None = None,
    grader: Grader | None = None,
    cache: BehaviourCache | None = None,
) -> dict[str, Contamination]:
    """task_id -> why, for each training problem that is the same task as a problem of ``against``
    (benchmark name -> its problems), in training order: the text check's match, else the first benchmark
    problem whose behaviour it shares. Without a ``grader`` only the text check runs."""
    s = settings or DecontaminationSettings()
    hits = find_contamination(train, against, s)
    if grader is not None:
        pending = behaviour_candidates([p for p in train if p.task_id not in hits], against)
        verdicts = same_behaviour([(p, other) for p, _, other in pending], grader, cache)
        for (problem, name, other), same in zip(pending, verdicts, strict=True):
            if same and problem.task_id not in hits:
                hits[problem.task_id] = Contamination(problem.task_id, name, other.task_id, "behaviour", 1.0)
        log.info("behaviour_check", candidate_pairs=len(pending), same_task=sum(verdicts))
        if cache is not None:
            cache.save()
    return {p.task_id: hits[p.task_id] for p in train if p.task_id in hits}
