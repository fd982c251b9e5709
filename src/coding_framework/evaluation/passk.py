"""The unbiased pass@k estimator of Chen et al. 2021 (https://arxiv.org/abs/2107.03374, section 2.1).

For a task with ``n`` samples of which ``c`` pass, ``pass@k = 1 - C(n - c, k) / C(n, k)``, computed as the
numerically stable product ``1 - prod_{i = n - c + 1}^{n} (1 - k / i)`` (no large binomials).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np


def _estimate(n: int, c: int, k: int) -> float:
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def pass_at_k(
    num_samples: int | Sequence[int] | np.ndarray, num_correct: Sequence[int] | np.ndarray, k: int
) -> np.ndarray:
    """pass@k for each task, shape ``(T,)``.

    ``num_samples`` is one ``n`` for all tasks or one per task (shape ``(T,)``); ``num_correct`` is ``c`` per
    task (shape ``(T,)``). Every task needs ``0 <= c <= n`` and ``n >= k >= 1``.
    """
    correct = np.asarray(num_correct, dtype=np.int64).reshape(-1)
    samples = np.broadcast_to(np.asarray(num_samples, dtype=np.int64), correct.shape)
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if np.any(correct < 0) or np.any(correct > samples):
        raise ValueError("each task needs 0 <= num_correct <= num_samples")
    if np.any(samples < k):
        raise ValueError(f"each task needs at least k={k} samples; got min n={int(samples.min())}")
    return np.array([_estimate(int(n), int(c), k) for n, c in zip(samples, correct, strict=True)])


def summarize(
    results_by_task: Mapping[str, Sequence[bool]], ks: Iterable[int] = (1, 10, 100)
) -> dict[str, float]:
    """Mean pass@k over tasks as ``{"pass@k": value}``, for each k every task has ``n >= k`` samples for."""
    if not results_by_task:
        return {}
    samples = np.array([len(r) for r in results_by_task.values()])
    correct = np.array([sum(bool(x) for x in r) for r in results_by_task.values()])
    return {
        f"pass@{k}": float(pass_at_k(samples, correct, k).mean()) for k in ks if k >= 1 and samples.min() >= k
    }
