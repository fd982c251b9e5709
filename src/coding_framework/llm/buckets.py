"""Splitting one batch of prompts into decoding batches that waste little compute on padding.

Left padding makes every row of a batch as long as its longest prompt, and agent prompts vary a lot (a
revision prompt carries the draft and the test feedback): one long prompt can triple the prefill of a
whole batch. Identical prompts (a GRPO group, an eval's samples) need prefilling only once.
"""

from __future__ import annotations

from collections.abc import Sequence


def length_buckets(prompts: Sequence[Sequence[int]], max_rows: int, overhead: int) -> list[list[int]]:
    """Indices of ``prompts`` grouped into batches of at most ``max_rows`` rows, cheapest plan first found.

    A batch costs ``distinct prompts x longest prompt`` prefill positions plus ``overhead``, the price of
    running one more decode loop, in the same unit. Rows are ordered by (length, ids), so identical prompts
    are adjacent and every batch is a contiguous run of that order; the split is an exact dynamic program.
    """
    if max_rows < 1:
        raise ValueError(f"max_rows must be >= 1, got {max_rows}")
    order = sorted(range(len(prompts)), key=lambda i: (len(prompts[i]), list(prompts[i])))
    distinct_before = [0]  # distinct_before[k]: distinct prompts among order[:k]
    for k, i in enumerate(order):
        fresh = k == 0 or list(prompts[i]) != list(prompts[order[k - 1]])
        distinct_before.append(distinct_before[-1] + fresh)
    n = len(order)
    best = [0] + [float("inf")] * n  # best[j]: cheapest plan for order[:j]
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        width = len(prompts[order[j - 1]])
        for i in range(max(0, j - max_rows), j):
            # a run that starts mid-way through equal prompts still prefills its first one
            distinct = distinct_before[j] - distinct_before[i + 1] + 1
            cost = best[i] + distinct * width + overhead
            if cost < best[j]:
                best[j], cut[j] = cost, i
    buckets: list[list[int]] = []
    j = n
    while j > 0:
        buckets.append(order[cut[j] : j])
        j = cut[j]
    return buckets[::-1]
