"""The bounded-staleness schedule: which version samples each step, what is pending, and that a resumed
pipeline hands out the same batches."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from coding_framework.testing.problems import ADD
from coding_framework.training.rollouts.engines import RolloutJob, RolloutPipeline, behaviour_version


class RecordingEngine:
    """A rollout engine that records what was published and which version each batch asked for."""

    def __init__(self) -> None:
        self.published: list[int] = []
        self.retired: list[int] = []

    def publish(self, version: int, snapshot: Any) -> float:
        self.published.append(version)
        return 0.0

    def engine_for(self, version: int) -> str:
        assert version in self.published
        return f"engine@{version}"

    def retire(self, oldest: int) -> None:
        self.retired.append(oldest)

    def close(self) -> None:
        pass


def _pipeline(k: int, steps: int, engine: RecordingEngine, log: list[tuple[int, str]]) -> RolloutPipeline:
    def draw(step: int) -> RolloutJob:
        return RolloutJob(step, behaviour_version(step, k), [], 1.0)

    def produce(job: RolloutJob, eng: Any) -> tuple[int, str]:
        log.append((job.step, eng))
        time.sleep(0.01)
        return job.step, eng

    return RolloutPipeline(engine, k, steps, draw, produce)


@pytest.mark.parametrize("k", [0, 1, 2])
def test_step_t_is_sampled_by_version_t_minus_k(k: int) -> None:
    engine, log = RecordingEngine(), []
    pipeline = _pipeline(k, 6, engine, log)
    pipeline.start(0, {})
    got = []
    for step in range(6):
        produced = pipeline.take(step)
        got.append(produced.result)
        assert len(pipeline.pending) == min(k, 5 - step)  # the next K steps are in flight
        pipeline.advance(step + 1, {})
    pipeline.close()
    assert got == [(s, f"engine@{max(0, s - k)}") for s in range(6)]
    assert [s for s, _ in log] == list(range(6))  # sampled in step order, one at a time


def test_async_batches_are_sampled_while_the_trainer_works() -> None:
    engine, log = RecordingEngine(), []
    pipeline = _pipeline(1, 3, engine, log)
    pipeline.start(0, {})
    pipeline.take(0)
    deadline = time.monotonic() + 5
    while len(log) < 2 and time.monotonic() < deadline:  # step 1 is sampled without a take
        time.sleep(0.005)
    assert [s for s, _ in log] == [0, 1]
    assert threading.active_count() >= 2
    pipeline.close()


def test_a_resumed_pipeline_regenerates_the_pending_batches() -> None:
    engine, log = RecordingEngine(), []
    first = _pipeline(2, 6, engine, log)
    first.start(0, {})
    for step in range(3):
        first.take(step)
        first.advance(step + 1, {})
    pending = sorted(first.pending.values(), key=lambda j: j.step)
    assert [(j.step, j.version) for j in pending] == [(3, 1), (4, 2)]
    first.close()

    again = RecordingEngine()
    resumed = _pipeline(2, 6, again, [])
    resumed.start(3, {}, pending, {1: {}, 2: {}})
    assert again.published == [1, 2, 3]
    assert [resumed.take(s).result for s in (3, 4)] == [(3, "engine@1"), (4, "engine@2")]
    resumed.close()


def test_jobs_round_trip_through_json() -> None:
    job = RolloutJob(4, 3, [ADD], 0.6)
    assert RolloutJob.from_json(job.to_json()) == job
