"""Probe-graded rollouts: problems with tests sent to both the champion and the candidate, off the request
path, so a rollout on chat-only traffic still has a verified-correctness signal.

A probe set is a problem source as everywhere else (``problems.sources``): a benchmark (``synthetic``), a
benchmark split (``mbpp:validation``, its file found under ``$CODING_FRAMEWORK_DATA_DIR`` as ``evaluate``
finds it) or a problem-record JSONL on the server. While its rollout runs, ``rate_per_s`` times a
second the next problem (in an order shuffled per rollout) goes to BOTH arms through the /v1/solve
workflow (``Solver.solve_problem``: the clients' prompt format, the same Grader), and the two outcomes
feed the rollout's tests as one probe pair (the paired stratum of every test; a version that failed to
answer counts a probe error instead).
Probes never touch the session assigner, so they cannot move sticky sessions or the sample-ratio check;
they take no admission slot, and a tick finding ``probe_concurrency`` pairs still in flight is skipped, so
probes never queue up behind clients.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any, Protocol

from coding_framework.agents.freeform import has_tests
from coding_framework.logs import get_logger
from coding_framework.problems import Problem, ProblemLoadError
from coding_framework.problems.sources import load_source
from coding_framework.serving.errors import APIError
from coding_framework.serving.rollouts.api import ProbePlan
from coding_framework.serving.rollouts.outcomes import Outcome

__all__ = ["ProbeRunner", "load_probe_set", "probe_order"]

log = get_logger(__name__)


def load_probe_set(source: str) -> list[Problem]:
    """The problems (with tests) of a probe source; a one-line ValueError when it names none."""
    try:
        problems = load_source(source)
    except (ProblemLoadError, ValueError, OSError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        first = first.removeprefix(f"problem source {source.strip()!r}: ")
        raise ValueError(f"probe source {source!r}: {first}; give a benchmark, NAME:SPLIT or a "
                         f"problem-record JSONL on the server") from None
    tested = [p for p in problems if has_tests(p)]
    if not tested:
        raise ValueError(f"probe source {source!r} has no problem with tests")
    return tested


def probe_order(rollout_id: str, problems: list[Problem]) -> list[Problem]:
    """The order a rollout probes in: shuffled by its id, so the same after a restart. A benchmark lists
    its problems by family or difficulty; probes taken in that order would show the arms one family at a
    time rather than a sample of the whole set."""
    return random.Random(rollout_id).sample(problems, len(problems))


class Prober(Protocol):
    """What probes use of the server (``server_context.Server``)."""

    config: Any
    solver: Any
    metrics: Any

    @property
    def rollouts(self) -> Any: ...

    def grade_probe_pair(self, versions: tuple[str, str], outcomes: tuple[Outcome | None, Outcome | None]
                         ) -> None: ...


class ProbeRunner:
    """Sends the active rollout's probe problems to both arms and reports their grades."""

    def __init__(self, server: Prober) -> None:
        self._server = server
        self._task: asyncio.Task[None] | None = None

    def start(self, rollout_id: str, plan: ProbePlan, problems: list[Problem], sent: int = 0) -> None:
        """Probe ``rollout_id`` from problem number ``sent`` of `probe_order` on (a resumed rollout
        continues its count)."""
        self.stop()
        order = probe_order(rollout_id, problems)
        self._task = asyncio.create_task(self._loop(rollout_id, plan, order, sent))

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _loop(self, rollout_id: str, plan: ProbePlan, problems: list[Problem], sent: int) -> None:
        busy = asyncio.Semaphore(self._server.config.rollout.probe_concurrency)
        pairs: set[asyncio.Task[Any]] = set()
        try:
            while plan.limit is None or sent < plan.limit:
                r = self._server.rollouts.active
                if r is None or r.id != rollout_id or r.status != "running":
                    break
                if not busy.locked():
                    await busy.acquire()
                    pair = asyncio.create_task(self._pair(busy, (r.champion, r.candidate),
                                                          problems[sent % len(problems)]))
                    pairs.add(pair)
                    pair.add_done_callback(pairs.discard)
                    sent += 1
                await asyncio.sleep(1 / plan.rate_per_s)
            await asyncio.gather(*pairs)  # the limit is reached (or the rollout ended): let them finish
        finally:
            for pair in list(pairs):
                pair.cancel()
        log.info("probes_stopped", rollout=rollout_id, sent=sent)

    async def _pair(self, busy: asyncio.Semaphore, versions: tuple[str, str], problem: Problem) -> None:
        try:
            champion, candidate = await asyncio.gather(*(self._one(v, problem) for v in versions))
        finally:
            busy.release()
        self._server.grade_probe_pair(versions, (champion, candidate))

    async def _one(self, version: str, problem: Problem) -> Outcome | None:
        server = self._server
        try:
            out = await server.solver.solve_problem(version, problem, server.config.solve.max_rounds)
        except APIError as exc:  # a dead or retired version: no grade, counted as a probe error
            server.metrics.probe(version, error=exc.code or str(exc.status))
            return None
        except Exception as exc:  # a probe must never take the server down; it is logged and counted
            log.warning("probe_failed", version=version, task=problem.task_id, error=str(exc)[:200])
            server.metrics.probe(version, error=type(exc).__name__)
            return None
        server.metrics.probe(version, error=None)
        assert out.outcome is not None
        return out.outcome
