"""The paired comparison behind "did the model learn": exact tests on the problems that changed."""

from __future__ import annotations

import pytest

from benchmarks.training.paired_learning import paired


def test_greedy_pairs_are_mcnemars_exact_test() -> None:
    before = {f"t{i}": 0.0 for i in range(40)}
    after = {**before, **{f"t{i}": 1.0 for i in range(10)}}
    result = paired(before, after)
    assert (result["improved"], result["worsened"], result["problems"]) == (10, 0, 40)
    assert result["p_value"] == pytest.approx(2 * 0.5**10)
    assert result["mean_change"] == pytest.approx(0.25) and result["ci95"][0] > 0


def test_sampled_shares_use_the_sign_of_each_change_and_leave_ties_out() -> None:
    before = {"a": 0.25, "b": 0.5, "c": 0.0, "d": 1.0}
    after = {"a": 0.5, "b": 0.25, "c": 0.0, "d": 1.0, "extra": 1.0}
    result = paired(before, after)
    assert (result["improved"], result["worsened"], result["problems"]) == (1, 1, 4)
    assert result["p_value"] == 1.0 and result["mean_change"] == 0.0
    assert paired({"a": 0.0}, {"a": 0.0})["p_value"] == 1.0
