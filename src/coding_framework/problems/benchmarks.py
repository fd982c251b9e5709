"""One entry point for every problem set: ``load_benchmark(name, source, split)``.

A new benchmark is a loader ``(source, split) -> list[Problem]`` decorated with ``@register_benchmark(name)``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from coding_framework.problems._io import ProblemLoadError
from coding_framework.problems.bigcodebench import load_bigcodebench
from coding_framework.problems.builtin import builtin_problems
from coding_framework.problems.codecontests import load_codecontests
from coding_framework.problems.evalplus import load_evalplus
from coding_framework.problems.humaneval import load_humaneval
from coding_framework.problems.mbpp import SPLITS, load_mbpp
from coding_framework.problems.problem import Problem
from coding_framework.problems.records import load_problem_records
from coding_framework.problems.synthetic import synthetic_split
from coding_framework.registry import Registry

Source = str | Path | None
Loader = Callable[[Source, str], list[Problem]]


BENCHMARKS: Registry[Loader] = Registry("benchmark", miss=ProblemLoadError)
register_benchmark = BENCHMARKS.register
"""Register the decorated loader as benchmark ``name``; a name can be registered once."""


@register_benchmark("humaneval")
def _humaneval(source: Source, split: str) -> list[Problem]:
    _check_split("humaneval", split, ("all", "test"))
    return load_humaneval(source)


def _mbpp(variant: str) -> Loader:
    def load(source: Source, split: str) -> list[Problem]:
        _check_split(f"mbpp ({variant})", split, ("all", *SPLITS))
        return load_mbpp(source, variant, split)  # type: ignore[arg-type]

    return load


register_benchmark("mbpp")(_mbpp("full"))
register_benchmark("mbpp-sanitized")(_mbpp("sanitized"))


@register_benchmark("bigcodebench")
def _bigcodebench(source: Source, split: str) -> list[Problem]:
    _check_split("bigcodebench", split, ("all", "complete", "instruct"))
    return load_bigcodebench(source, "instruct" if split == "instruct" else "complete")


@register_benchmark("codecontests")
def _codecontests(source: Source, split: str) -> list[Problem]:
    return load_codecontests(source, split)


@register_benchmark("humanevalplus")
def _humanevalplus(source: Source, split: str) -> list[Problem]:
    _check_split("humanevalplus", split, ("all", "test"))
    return load_evalplus(source, "humaneval")


@register_benchmark("mbppplus")
def _mbppplus(source: Source, split: str) -> list[Problem]:
    _check_split("mbppplus", split, ("all", "test"))
    return load_evalplus(source, "mbpp")


@register_benchmark("builtin")
def _builtin(source: Source, split: str) -> list[Problem]:
    _check_split("builtin", split, ("all",))
    _no_source("builtin", source)
    return builtin_problems()


@register_benchmark("synthetic")
def _synthetic(source: Source, split: str) -> list[Problem]:
    _check_split("synthetic", split, ("all", "train", "heldout"))
    _no_source("synthetic", source)
    train, heldout = synthetic_split()
    return {"all": train + heldout, "train": train, "heldout": heldout}[split]


@register_benchmark("jsonl")
def _jsonl(source: Source, split: str) -> list[Problem]:
    _check_split("jsonl", split, ("all",))
    if source is None:
        raise ProblemLoadError("the jsonl benchmark reads a file of problem records: pass its path as source")
    return load_problem_records(source)


def load_benchmark(name: str, source: Source = None, split: str = "all") -> list[Problem]:
    """The problems of benchmark ``name`` (one of :data:`BENCHMARKS`).

    ``source`` is passed to the loader (a local path, ``"hf"``, or ``None`` for its default; the built-in
    and synthetic sets take none). ``split`` is ``"all"`` or a split that benchmark has: MBPP's
    ``train``/``validation``/``test``/``prompt``, synthetic's ``train``/``heldout``, HumanEval's ``test``.
    The synthetic split uses :func:`synthetic_split` defaults; call it directly for other sizes.
    """
    return BENCHMARKS.resolve(name)(source, split)


def _check_split(name: str, split: str, allowed: tuple[str, ...]) -> None:
    if split not in allowed:
        raise ProblemLoadError(f"{name} has no split {split!r}; choose one of {', '.join(allowed)}")


def _no_source(name: str, source: Source) -> None:
    if source is not None:
        raise ProblemLoadError(
            f"the {name} problems ship with the package; do not pass a source ({source!r})"
        )
