"""load_benchmark dispatch and errors, and the pinned public exports of coding_framework.problems."""

from __future__ import annotations

import pytest

from coding_framework.problems import BENCHMARKS, ProblemLoadError, load_benchmark


def test_benchmark_names() -> None:
    assert set(BENCHMARKS) == {
        "humaneval", "mbpp", "mbpp-sanitized", "builtin", "synthetic",
        "bigcodebench", "codecontests", "humanevalplus", "mbppplus", "jsonl",
    }  # fmt: skip


def test_unknown_benchmark_and_split_errors() -> None:
    listing = r"unknown benchmark 'apps'; valid benchmarks: \['bigcodebench', 'builtin', 'codecontests'"
    with pytest.raises(ProblemLoadError, match=listing):
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


def test_register_benchmark_rejects_a_second_loader_under_a_taken_name() -> None:
    from coding_framework.problems import BENCHMARKS, register_benchmark

    with pytest.raises(ValueError, match="'humaneval' is already registered"):
        register_benchmark("humaneval")(lambda source, split: [])
    assert register_benchmark("builtin")(BENCHMARKS["builtin"]) is BENCHMARKS["builtin"]
