"""A failing worker never aborts an evaluation: start retries, one regrade, per-job infrastructure errors.

The faults are injected into real bwrap workers (a start command that exits, a judge killed or frozen
from outside mid-job), so the pool meets the same failures a real engine or kernel produces. Both tiers
run on the one pool; the in-process tier's zygotes get the same faults at the end.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

from coding_framework.config import SandboxConfig
from coding_framework.config.inprocess import InProcessConfig
from coding_framework.config.sandbox import ResourceLimits
from coding_framework.sandbox import BackendUnavailable, Job, Sandbox
from coding_framework.sandbox import pool as pool_module
from coding_framework.sandbox.backends import BACKENDS, BwrapWorker, register_backend
from coding_framework.sandbox.inprocess import InProcessSandbox, UnittestTask
from coding_framework.sandbox.inprocess.worker import ZygoteWorker
from tests.sandbox.bigcodebench_env import needs_env

ADD = "def add(a, b):\n    return a + b\n"
HONEST = Job(program=ADD, test_code="assert add(1, 2) == 3\n", entry_point="add")
KILLS_WORKER = Job(program="# kill-my-worker\n" + ADD, test_code=HONEST.test_code, entry_point="add")


class FaultyWorker(BwrapWorker):
    """A bwrap worker whose next starts fail (``failing_starts``), or whose judge is killed mid-job."""

    failing_starts: ClassVar[int] = 0
    always_fail_start: ClassVar[bool] = False
    deaths_left: ClassVar[int] = 0
    freeze_marked: ClassVar[bool] = False
    starts: ClassVar[int] = 0
    engine_gone: ClassVar[bool] = False

    def __init__(self, config: SandboxConfig) -> None:
        if type(self).engine_gone:
            raise BackendUnavailable("the engine stopped answering")
        super().__init__(config)

    def start(self, timeout_s: float) -> None:
        type(self).starts += 1
        if type(self).always_fail_start or type(self).failing_starts > 0:
            type(self).failing_starts -= 1
            self._cmd = ["/bin/false"]  # exits before the hello: the real "exited during start-up" path
        super().start(timeout_s)

    def request(self, job: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        if "kill-my-worker" in job["program"]:
            self._signal_tree(signal.SIGSTOP if self.freeze_marked else signal.SIGKILL)
        elif type(self).deaths_left > 0:
            type(self).deaths_left -= 1
            self._signal_tree(signal.SIGKILL)  # the engine or the OOM killer takes the worker
        return super().request(job, timeout_s)

    def _signal_tree(self, sig: int) -> None:
        assert self._proc is not None
        signal_tree(self._proc.pid, sig)


def signal_tree(root: int, sig: int) -> None:
    """Signal bwrap and everything under it, the judge included, before the job is sent."""
    pids, todo = [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        with open(f"/proc/{pid}/task/{pid}/children") as children:
            todo += [int(c) for c in children.read().split()]
    for pid in reversed(pids):
        os.kill(pid, sig)


@pytest.fixture
def faulty(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[FaultyWorker]]:
    monkeypatch.setattr(pool_module, "BACKOFF_S", 0.01)
    register_backend("faulty")(FaultyWorker)
    FaultyWorker.failing_starts, FaultyWorker.always_fail_start = 0, False
    FaultyWorker.deaths_left, FaultyWorker.freeze_marked, FaultyWorker.starts = 0, False, 0
    FaultyWorker.engine_gone = False
    yield FaultyWorker
    del BACKENDS["faulty"]


def _sandbox(workers: int = 1) -> Sandbox:
    return Sandbox(SandboxConfig(backend="faulty", workers=workers))


def test_a_worker_that_fails_to_start_is_started_again(faulty: type[FaultyWorker]) -> None:
    faulty.failing_starts = pool_module.START_ATTEMPTS - 1
    with _sandbox() as sb:
        assert sb.run(HONEST).passed
    assert faulty.starts == pool_module.START_ATTEMPTS


def test_a_backend_that_never_starts_fails_fast_with_one_message(faulty: type[FaultyWorker]) -> None:
    faulty.always_fail_start = True
    with _sandbox() as sb:
        with pytest.raises(BackendUnavailable, match=r"it exited during start-up.*\(3 attempts\)"):
            sb.run(HONEST)
        with pytest.raises(BackendUnavailable):
            sb.run(HONEST)
    assert faulty.starts == pool_module.START_ATTEMPTS, "the second job must not retry a dead backend"


def test_starts_failing_later_give_that_job_an_infrastructure_error(faulty: type[FaultyWorker]) -> None:
    with _sandbox() as sb:
        assert sb.run(HONEST).passed
        faulty.deaths_left, faulty.always_fail_start = 1, True
        lost = sb.run(HONEST)
        faulty.always_fail_start = False
        after = sb.run(HONEST)
    assert not lost.passed and lost.status == "error"
    assert lost.error_type == "SandboxInfrastructureError"
    assert "no sandbox worker could be started" in (lost.error_message or "")
    assert after.passed, "the pool carries on once workers start again"


def test_an_engine_that_goes_away_mid_evaluation_costs_jobs_not_the_evaluation(
    faulty: type[FaultyWorker],
) -> None:
    with _sandbox(workers=2) as sb:
        assert sb.run(HONEST).passed
        faulty.engine_gone, faulty.deaths_left = True, 1
        lost = sb.run(HONEST)
    assert lost.error_type == "SandboxInfrastructureError"
    assert "the engine stopped answering" in (lost.error_message or "")


def test_a_worker_killed_from_outside_mid_job_is_regraded(faulty: type[FaultyWorker]) -> None:
    faulty.deaths_left = 1
    with _sandbox() as sb:
        results = sb.run_many([HONEST] * 3)
    assert [r.passed for r in results] == [True, True, True]
    assert faulty.starts == 2


def test_a_submission_that_kills_every_worker_is_a_crash_not_an_infrastructure_error(
    faulty: type[FaultyWorker],
) -> None:
    with _sandbox() as sb:
        crashed = sb.run(KILLS_WORKER)
        assert sb.run(HONEST).passed
    assert crashed.status == "crashed" and crashed.error_type == "SandboxWorkerDied"
    assert "twice" in (crashed.error_message or "")
    assert faulty.starts == 3, "one run, one regrade on a fresh worker, then a fresh worker for the next job"


def test_a_submission_that_hangs_every_worker_times_out_after_one_regrade(
    faulty: type[FaultyWorker], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool_module, "HOST_GRACE_S", 0.2)
    faulty.freeze_marked = True
    job = Job(
        program=KILLS_WORKER.program,
        test_code=HONEST.test_code,
        entry_point="add",
        limits=ResourceLimits(timeout_s=0.3),
    )
    with _sandbox() as sb:
        result = sb.run(job)
    assert result.status == "timeout" and result.timed_out and not result.passed
    assert 1.0 <= result.duration_s < 5.0
    assert faulty.starts == 2


# -- the in-process tier: the same pool, so the same faults injected into real zygote workers
TASK = UnittestTask(
    "def task_func():\n    return 3\n",
    "import unittest\nclass TestCases(unittest.TestCase):\n    def test_it(self):\n"
    "        self.assertEqual(task_func(), 3)\n",
)
KILLS_ZYGOTE = UnittestTask("# kill-my-worker\n" + TASK.solution, TASK.test_code)


class FaultyZygote(ZygoteWorker):
    """A zygote worker whose next starts fail (``failing_starts``), or that is killed mid-task."""

    failing_starts: ClassVar[int] = 0
    deaths_left: ClassVar[int] = 0
    starts: ClassVar[int] = 0

    def start(self, timeout_s: float) -> None:
        type(self).starts += 1
        if type(self).failing_starts > 0:
            type(self).failing_starts -= 1
            self._cmd = ["/bin/false"]
        super().start(timeout_s)

    def request(self, job: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        if "kill-my-worker" in job["code"]:
            type(self).failing_starts = pool_module.START_ATTEMPTS  # and no fresh worker comes up for it
            type(self).deaths_left = 1
        if type(self).deaths_left > 0:
            type(self).deaths_left -= 1
            assert self._proc is not None
            signal_tree(self._proc.pid, signal.SIGKILL)
        return super().request(job, timeout_s)


class FaultyInProcess(InProcessSandbox):
    def _new_worker(self) -> FaultyZygote:
        return FaultyZygote(self.config)


@pytest.fixture
def zygotes(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[FaultyZygote]]:
    monkeypatch.setattr(pool_module, "BACKOFF_S", 0.01)
    FaultyZygote.failing_starts, FaultyZygote.deaths_left, FaultyZygote.starts = 0, 0, 0
    yield FaultyZygote


def _inprocess() -> FaultyInProcess:
    return FaultyInProcess(InProcessConfig(workers=1, timeout_s=5.0, preload=[]))


@needs_env
def test_an_inprocess_worker_that_cannot_start_costs_one_task_not_the_batch(
    zygotes: type[FaultyZygote],
) -> None:
    zygotes.failing_starts = pool_module.START_ATTEMPTS - 1
    with _inprocess() as pool:
        results = pool.run_many([TASK, KILLS_ZYGOTE, TASK, TASK])
    assert [r.passed for r in results] == [True, False, True, True]
    lost = results[1]
    assert lost.status == "error" and lost.error_type == "SandboxInfrastructureError", lost.summary
    assert lost.tier == "in_process" and "no sandbox worker could be started" in (lost.error_message or "")
    assert zygotes.starts == 2 * pool_module.START_ATTEMPTS + 1, "retried at first, at the regrade, then up"


@needs_env
def test_an_inprocess_worker_killed_mid_task_is_regraded(zygotes: type[FaultyZygote]) -> None:
    zygotes.deaths_left = 1
    with _inprocess() as pool:
        results = pool.run_many([TASK] * 3)
    assert [r.passed for r in results] == [True, True, True]
    assert zygotes.starts == 2
