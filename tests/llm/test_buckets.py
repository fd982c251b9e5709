"""length_buckets: every prompt decoded once, batches bounded, padding traded against extra decode loops."""

from __future__ import annotations

import pytest

from coding_framework.llm.buckets import length_buckets


def _flat(buckets: list[list[int]]) -> list[int]:
    return sorted(i for b in buckets for i in b)


def test_every_prompt_lands_in_exactly_one_bounded_batch() -> None:
    prompts = [[7] * n for n in (5, 90, 12, 12, 40, 3, 200, 41, 8)]
    buckets = length_buckets(prompts, max_rows=3, overhead=10)
    assert _flat(buckets) == list(range(len(prompts)))
    assert all(1 <= len(b) <= 3 for b in buckets)


def test_one_long_prompt_gets_its_own_batch_when_padding_costs_more() -> None:
    prompts = [[1] * 100 for _ in range(7)] + [[2] * 1000]
    buckets = length_buckets([[i, *p] for i, p in enumerate(prompts)], max_rows=64, overhead=500)
    assert [len(b) for b in buckets] == [7, 1]
    assert buckets[1] == [7]


def test_a_large_overhead_keeps_one_batch() -> None:
    prompts = [[3] * n for n in (10, 20, 400)]
    assert length_buckets(prompts, max_rows=8, overhead=10**6) == [[0, 1, 2]]


def test_identical_prompts_are_adjacent_and_prefilled_once() -> None:
    a, b = [5, 6, 7], [5, 6, 8]
    prompts = [a, b, a, b, a]
    (bucket,) = length_buckets(prompts, max_rows=8, overhead=100)
    assert [prompts[i] for i in bucket] == [a, a, a, b, b]
    # two distinct prompts of width 3 (6 positions) beat splitting them (6 positions + another overhead)
    assert len(length_buckets(prompts, max_rows=8, overhead=1)) == 1


def test_empty_input_and_bad_bound() -> None:
    assert length_buckets([], max_rows=4, overhead=1) == []
    with pytest.raises(ValueError, match="max_rows"):
        length_buckets([[1]], max_rows=0, overhead=1)
