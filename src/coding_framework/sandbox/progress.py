"""Run work on a thread pool in input order, with a progress bar on stderr when asked."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor, as_completed
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def map_in_order(
    executor: Executor, fn: Callable[[T], R], items: Sequence[T], progress: bool | str, label: str
) -> list[R]:
    """``fn`` over ``items`` concurrently, results in input order; ``progress``: a bar (a str: its label)."""
    if not progress:
        return list(executor.map(fn, items))
    from rich.console import Console
    from rich.progress import Progress

    results: dict[int, R] = {}
    with Progress(console=Console(stderr=True), transient=False) as bar:
        task = bar.add_task(progress if isinstance(progress, str) else label, total=len(items))
        futures = {executor.submit(fn, item): i for i, item in enumerate(items)}
        for fut in as_completed(futures):
            results[futures[fut]] = fut.result()
            bar.advance(task)
    return [results[i] for i in range(len(items))]


__all__ = ["map_in_order"]
