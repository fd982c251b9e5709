"""The bounded-staleness rollout schedule: step t's batch is sampled by policy version ``max(0, t - K)``.

It is a fixed pipeline, not a race. When the trainer takes step t's batch, the batches of steps up to
t + K are submitted (their problems drawn, in step order), and each is sampled with the weights of its own
version, whatever the trainer has published since; each batch's randomness comes from its step. So a run's
batches depend on its seed and K only, and K = 0 is the synchronous trainer, run inline.

With K >= 1 one worker thread samples the batches in step order while the trainer updates: with the vLLM
engine the sampling runs in the server's processes, beside the update. The batches submitted but not yet
trained on (``pending``) and the weights of their versions are what a checkpoint must hold to resume
exactly (``Trainer`` saves them).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from coding_framework.problems import Problem
from coding_framework.repotasks import RepoTask
from coding_framework.training.algos.schedule import Task
from coding_framework.training.rollouts.engines.base import PolicySnapshot, RolloutEngine

__all__ = ["Produced", "RolloutJob", "RolloutPipeline", "behaviour_version"]


def behaviour_version(step: int, max_staleness: int) -> int:
    """The policy version that samples step ``step``'s batch."""
    return max(0, step - max_staleness)


@dataclass
class RolloutJob:
    """The recipe of one step's batch: with the version's weights it regenerates the same batch."""

    step: int
    version: int
    problems: list[Task]
    temperature: float

    def to_json(self) -> dict[str, Any]:
        repository = any(isinstance(p, RepoTask) for p in self.problems)
        return {"step": self.step, "version": self.version, "temperature": self.temperature,
                "problems": [p.model_dump(mode="json") for p in self.problems],
                **({"kind": "repository"} if repository else {})}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RolloutJob:
        kind: type[Problem] | type[RepoTask] = RepoTask if data.get("kind") == "repository" else Problem
        return cls(step=data["step"], version=data["version"], temperature=data["temperature"],
                   problems=[kind.model_validate(p) for p in data["problems"]])


@dataclass
class Produced:
    """A sampled batch, what produced it, and how long the generator sat idle before starting it."""

    job: RolloutJob
    result: Any
    generator_idle_s: float
    trainer_idle_s: float = 0.0
    seconds: float = 0.0


class RolloutPipeline:
    """``take(step)`` returns step ``step``'s batch; ``advance(version, snapshot)`` publishes the weights
    an update produced. ``produce(job, engine)`` samples one batch; ``draw(step)`` makes its recipe."""

    def __init__(self, engine: RolloutEngine, max_staleness: int, steps: int,
                 draw: Callable[[int], RolloutJob], produce: Callable[[RolloutJob, Any], Any]) -> None:
        self.engine, self.k, self.steps = engine, max_staleness, steps
        self.draw, self.produce = draw, produce
        self.snapshots: dict[int, PolicySnapshot] = {}
        self.version = 0
        self.pending: dict[int, RolloutJob] = {}
        self._futures: dict[int, Future[Produced]] = {}
        self._next = 0
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="rollout") if max_staleness else None
        self._idle_since: float | None = None

    # -- publishing weights ---------------------------------------------------------------------------

    def start(self, version: int, snapshot: PolicySnapshot, pending: list[RolloutJob] | None = None,
              snapshots: dict[int, PolicySnapshot] | None = None) -> float:
        """Begin at ``version`` (the trainer's weights now); a resumed run passes the batches that were
        pending at its checkpoint and the weights of their versions. The sync seconds."""
        seconds = 0.0
        for v, snap in sorted((snapshots or {}).items()):
            if v != version:
                self.snapshots[v] = snap
                seconds += self.engine.publish(v, snap)
        seconds += self._publish(version, snapshot)
        for job in pending or []:
            self._submit(job)
        self._next = max([self._next, *(j.step + 1 for j in pending or [])])
        return seconds

    def advance(self, version: int, snapshot: PolicySnapshot) -> float:
        """Publish the weights of ``version`` (after an update); forget versions no batch needs now."""
        seconds = self._publish(version, snapshot)
        oldest = min([version, *(j.version for j in self.pending.values())])
        for v in [v for v in self.snapshots if v < oldest]:
            del self.snapshots[v]
        self.engine.retire(oldest)
        return seconds

    def _publish(self, version: int, snapshot: PolicySnapshot) -> float:
        self.version = version
        self.snapshots[version] = snapshot
        return self.engine.publish(version, snapshot)

    # -- batches --------------------------------------------------------------------------------------

    def take(self, step: int) -> Produced:
        """Step ``step``'s batch, once the batches up to ``step + K`` are submitted."""
        if self._next <= step:
            self._next = step  # a fresh run, or a resumed synchronous one, starts here
        while self._next <= min(step + self.k, self.steps - 1):
            self._submit(self.draw(self._next))
            self._next += 1
        waited = time.perf_counter()
        produced = self._futures.pop(step).result() if self._worker else self._run(self.pending[step])
        produced.trainer_idle_s = time.perf_counter() - waited
        del self.pending[step]
        return produced

    def snapshot_of(self, version: int) -> PolicySnapshot:
        return self.snapshots[version]

    def _submit(self, job: RolloutJob) -> None:
        self.pending[job.step] = job
        if self._worker is not None:
            self._futures[job.step] = self._worker.submit(self._run, job)

    def _run(self, job: RolloutJob) -> Produced:
        started = time.perf_counter()
        idle = 0.0 if self._idle_since is None else started - self._idle_since
        result = self.produce(job, self.engine.engine_for(job.version))
        self._idle_since = time.perf_counter()
        return Produced(job, result, generator_idle_s=idle, seconds=self._idle_since - started)

    def close(self) -> None:
        if self._worker is not None:
            self._worker.shutdown(wait=True, cancel_futures=True)
        self.engine.close()
