"""`gather_eagerly`: gather's results and errors, with inline starts for steps that never wait."""

from __future__ import annotations

import asyncio
import contextvars

import pytest

from benchmarks.training.orchestration.eager import gather_eagerly

LABEL: contextvars.ContextVar[str] = contextvars.ContextVar("label", default="none")


async def instant(x: int) -> int:
    return x * 2


async def waits(x: int) -> int:
    await asyncio.sleep(0.001 * (5 - x))
    return x * 10


async def fails_late() -> int:
    await asyncio.sleep(0.001)
    raise ValueError("late")


async def fails_at_once() -> int:
    raise KeyError("early")


def test_results_in_order_mixing_instant_and_waiting_steps() -> None:
    async def main() -> list[int]:
        return await gather_eagerly([instant(1), waits(2), instant(3), waits(4)])

    assert asyncio.run(main()) == [2, 20, 6, 40]


def test_instant_steps_need_no_task() -> None:
    async def main() -> tuple[list[int], int]:
        before = len(asyncio.all_tasks())
        seen: list[int] = []

        async def count(x: int) -> int:
            seen.append(len(asyncio.all_tasks()))
            return x

        out = await gather_eagerly([count(i) for i in range(20)])
        return out, max(seen) - before

    out, extra_tasks = asyncio.run(main())
    assert out == list(range(20)) and extra_tasks == 0


def test_first_error_raised_after_all_finish() -> None:
    done: list[str] = []

    async def slow_ok() -> int:
        await asyncio.sleep(0.01)
        done.append("slow")
        return 1

    async def main() -> None:
        await gather_eagerly([fails_at_once(), slow_ok(), fails_late()])

    with pytest.raises(KeyError, match="early"):
        asyncio.run(main())
    assert done == ["slow"]


def test_each_step_runs_in_its_own_context_copy() -> None:
    async def tag(name: str) -> str:
        LABEL.set(name)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return LABEL.get()

    async def main() -> tuple[list[str], str]:
        out = await gather_eagerly([tag("a"), tag("b"), tag("c")])
        return out, LABEL.get()

    assert asyncio.run(main()) == (["a", "b", "c"], "none")


def test_cancellation_reaches_waiting_steps() -> None:
    cancelled: list[bool] = []

    async def forever() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    async def main() -> None:
        task = asyncio.ensure_future(gather_eagerly([forever(), forever()]))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert cancelled == [True, True]
