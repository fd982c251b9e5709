"""Run many coroutines concurrently, paying for a task only when one actually waits.

A batched graph node runs one step per episode. With a fast model or a cached answer most steps finish
without ever suspending, and then a task per step (scheduling, context switch, done callbacks) costs more
than the step. So each step first runs inline up to its first suspension; only the ones that suspend go
on in a task. This is Python 3.12's ``eager_task_factory`` semantics, scoped to one call on 3.11.
"""

from __future__ import annotations

import asyncio
import contextvars
import types
from collections.abc import Coroutine, Generator
from typing import Any, TypeVar

T = TypeVar("T")


@types.coroutine
def _continue(coro: Coroutine[Any, Any, T], waiting: Any) -> Generator[Any, Any, T]:
    """Drive ``coro`` on from the point where it yielded ``waiting`` to the event loop, inside a task."""
    while True:
        try:
            sent = yield waiting
        except BaseException as exc:  # thrown in by the task, e.g. cancellation
            try:
                waiting = coro.throw(exc)
            except StopIteration as done:
                return done.value
        else:
            try:
                waiting = coro.send(sent)
            except StopIteration as done:
                return done.value


async def _finish(coro: Coroutine[Any, Any, T], waiting: Any) -> T:
    return await _continue(coro, waiting)


async def gather_eagerly(
    coros: list[Coroutine[Any, Any, T]], context: contextvars.Context | None = None
) -> list[T]:
    """``asyncio.gather(*coros)`` where each coroutine starts inline, in its own copy of ``context``.

    Results come in input order. The first exception is raised once every coroutine has finished, so none
    is left running unobserved.
    """
    base = context if context is not None else contextvars.copy_context()
    results: list[Any] = [None] * len(coros)
    pending: dict[int, asyncio.Task[T]] = {}
    error: BaseException | None = None
    for i, coro in enumerate(coros):
        ctx = base.copy()
        try:
            waiting = ctx.run(coro.send, None)
        except StopIteration as done:
            results[i] = done.value
        except BaseException as exc:
            error = error or exc
        else:
            pending[i] = asyncio.get_running_loop().create_task(_finish(coro, waiting), context=ctx)
    if pending:
        finished = await asyncio.gather(*pending.values(), return_exceptions=True)
        for i, value in zip(pending, finished, strict=True):
            if isinstance(value, BaseException):
                error = error or value
            results[i] = value
    if error is not None:
        raise error
    return results
