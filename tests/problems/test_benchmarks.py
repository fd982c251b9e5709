"""load_benchmark dispatch and errors, and the pinned public exports of coding_framework.problems."""

from __future__ import annotations

import pytest

import coding_framework.problems as problems_pkg
from coding_framework.problems import BENCHMARKS, ProblemLoadError, load_benchmark


def test_public_exports_are_pinned() -> None:
    assert set(problems_pkg.__all__) == {
        "BENCHMARKS", "FAMILIES", "Difficulty", "Problem", "ProblemLoadError", "TestFormat",
        "builtin_problems", "generate_instances", "load_benchmark", "load_humaneval", "load_mbpp",
        "mbpp_few_shot_prompt", "reserved_split", "synthetic_split",
    }  # fmt: skip
    assert all(hasattr(problems_pkg, name) for name in problems_pkg.__all__)


def test_benchmark_names() -> None:
    assert set(BENCHMARKS) == {"humaneval", "mbpp", "mbpp-sanitized", "builtin", "synthetic"}


def test_unknown_benchmark_and_split_errors() -> None:
    with pytest.raises(ProblemLoadError, match="unknown benchmark 'apps'; choose one of humaneval"):
        load_benchmark("apps")
    with pytest.raises(ProblemLoadError, match="humaneval has no split 'train'"):
        load_benchmark("humaneval", split="train")
    with pytest.raises(ProblemLoadError, match="builtin has no split 'test'"):
        load_benchmark("builtin", split="test")
    with pytest.raises(ProblemLoadError, match="synthetic has no split 'validation'"):
        load_benchmark("synthetic", split="validation")
    with pytest.raises(ProblemLoadError, match="do not pass a source"):
        load_benchmark("builtin", source="somewhere")


def test_load_error_is_a_value_error() -> None:
    assert issubclass(ProblemLoadError, ValueError)
