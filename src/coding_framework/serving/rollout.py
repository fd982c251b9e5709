"""Rollouts: move traffic from the champion version to a candidate, gated by an always-valid test.

Strategies (``RolloutPolicy`` holds the numbers):
- ``canary``: the candidate gets ``steps`` percent of new sessions in turn (10 -> 50 -> 100). A step ends
  only when the candidate has ``min_graded`` graded requests within it AND the sequential test finds it
  non-inferior within ``margin``; passing the last step promotes. Never a timer.
- ``immediate``: one step of 100%: the swap is at once, the watch stays on; the baseline is the champion's
  history before the swap (when it has no grades, ``min_graded`` clean candidate grades promote).
- ``shadow``: the client always gets the champion's answer; ``shadow_share`` of requests also go to the
  candidate, whose answer is graded and dropped. Non-inferior after ``min_graded`` grades promotes.

At any moment a significantly lower pass rate (``serving.stats.compare``), an error burst (``error_burst``
of the last ``error_window`` candidate requests failed and its error rate is significantly above the
champion's, no grades needed) or a sample-ratio mismatch rolls back: no request reaches the candidate
after that. Decisions run inside ``observe``/``observe_grade`` (cheap, any thread); retiring versions,
moving registry aliases and MLflow logging run in the background (see ``serving.promotion``).
"""

from __future__ import annotations

import asyncio
import builtins
import random
import threading
import time
import uuid
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import ValidationError

from coding_framework.config.rollout import RolloutPolicy
from coding_framework.logs import get_logger
from coding_framework.serving.arms import Arm
from coding_framework.serving.assignment import Assigner
from coding_framework.serving.promotion import RolloutLog
from coding_framework.serving.stats import Comparison, SequentialSRM, Verdict, compare, confidence_sequence

__all__ = ["STRATEGIES", "RolloutConflict", "RolloutHooks", "RolloutManager", "Route"]

log = get_logger(__name__)

STRATEGIES = ("immediate", "shadow", "canary")


@dataclass(frozen=True)
class Route:
    """``version`` answers the client; ``shadow`` (if any) also gets the request, measured and graded only."""

    version: str
    shadow: str | None = None


class RolloutHooks(Protocol):
    """What the server provides: loading and unloading versions, and where a version is registered."""

    async def deploy(self, spec: str) -> str: ...

    async def retire(self, version_id: str) -> None: ...

    def registry_of(self, version_id: str) -> tuple[str, int, str | None] | None: ...


class RolloutConflict(Exception):
    """A rollout is already running (HTTP 409)."""


@dataclass
class _Rollout:
    id: str
    candidate: str
    champion: str
    strategy: str
    steps: list[int]
    arms: dict[str, Arm]
    srm: SequentialSRM
    step: int = 0
    step_start_graded: int = 0
    status: str = "running"
    reason: str = ""
    test: Comparison | None = None
    decisions: list[dict[str, Any]] = field(default_factory=list)
    mlflow_run_id: str | None = None

    @property
    def weight(self) -> int:
        """The candidate's percent of new sessions (shadow: 0, it never answers)."""
        if self.status == "promoted":
            return 100
        if self.status == "rolled_back" or self.strategy == "shadow":
            return 0
        return self.steps[self.step]


class RolloutManager:
    """Routes requests between the champion and at most one running rollout's candidate."""

    def __init__(
        self, champion: str, policy: RolloutPolicy, hooks: RolloutHooks, *, tracking_uri: str | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self._policy = policy
        self._hooks = hooks
        self._rng = rng or random.Random()
        self._assigner = Assigner(champion, policy.pin_table_size, self._rng)
        self._history: dict[str, Arm] = {}
        self._rollouts: dict[str, _Rollout] = {}
        self._active: _Rollout | None = None
        self._starting = False
        self._lock = threading.RLock()
        self._log = RolloutLog(tracking_uri)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def champion(self) -> str:
        return self._assigner.champion

    def route(self, session_id: str | None) -> Route:
        with self._lock:
            assignment = self._assigner.assign(session_id)
            r = self._active
            if r is None:
                return Route(assignment.version)
            if r.strategy == "shadow":
                mirrored = self._rng.random() * 100 < self._policy.shadow_share * 100
                if r.srm.add(int(mirrored)):
                    self._rollback(r, self._srm_reason(r))
                    return Route(self.champion)
                return Route(assignment.version, r.candidate if mirrored else None)
            if assignment.fresh and r.srm.add(int(assignment.version == r.candidate)):
                self._rollback(r, self._srm_reason(r))
                return Route(self.champion)
            return Route(assignment.version)

    def observe(self, version: str, *, latency_s: float, error: bool, tokens: int) -> None:
        with self._lock:
            self._arm(self._history, version).record(latency_s=latency_s, error=error, tokens=tokens)
            r = self._active
            if r is None or version not in r.arms:
                return
            r.arms[version].record(latency_s=latency_s, error=error, tokens=tokens)
            if error and version == r.candidate:
                self._check_errors(r)

    def observe_grade(self, version: str, passed: bool) -> None:
        with self._lock:
            self._arm(self._history, version).record_grade(passed)
            r = self._active
            if r is None or version not in r.arms:
                return
            r.arms[version].record_grade(passed)
            self._check_grades(r)

    async def start(self, candidate_spec: str, strategy: str, steps: list[int] | None) -> dict[str, Any]:
        """Deploy ``candidate_spec`` and start moving traffic to it. ValueError: bad input (a 4xx)."""
        plan = self._plan(strategy, steps)
        with self._lock:
            if self._active is not None or self._starting:
                running = self._active.id if self._active else "another rollout"
                raise RolloutConflict(f"rollout {running} is still running; wait until it is promoted or "
                                      f"rolled back")
            self._starting = True
            self._loop = asyncio.get_running_loop()
        try:
            candidate = await self._hooks.deploy(candidate_spec)
            if candidate == self.champion:
                raise ValueError(f"{candidate_spec!r} is the champion ({candidate}) already; "
                                 f"nothing to roll out")
            r = self._new_rollout(candidate, strategy, plan)
            r.mlflow_run_id = await asyncio.to_thread(self._log.open, self._params(r, candidate_spec),
                                                      self._hooks.registry_of(candidate))
            with self._lock:
                self._activate(r)
        finally:
            self._starting = False
        return self.status(r.id)

    def status(self, rollout_id: str) -> dict[str, Any]:
        """The contract's status object; KeyError for an unknown id."""
        with self._lock:
            return self._status(self._rollouts[rollout_id])

    def list(self) -> list[dict[str, Any]]:
        with self._lock:
            return [self._status(r) for r in self._rollouts.values()]

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await asyncio.to_thread(self._log.close)

    # -- decisions (called with the lock held) ---------------------------------------------------------

    def _check_errors(self, r: _Rollout) -> None:
        cand, champ = r.arms[r.candidate], r.arms[r.champion]
        burst = cand.recent_errors
        if burst < self._policy.error_burst:
            return
        _, lower, upper = confidence_sequence(
            (champ.errors, champ.requests), (cand.errors, cand.requests), self._policy.alpha,
            self._policy.mixture_tau)
        if champ.requests and lower <= 0:
            return
        baseline = (f"the champion's error rate is {champ.errors}/{champ.requests} (always-valid interval of "
                    f"the difference [{lower:.3f}, {upper:.3f}])" if champ.requests else
                    "the champion has no requests to compare with")
        self._rollback(r, f"error burst: {burst} of the last {cand.window} candidate requests failed "
                          f"({cand.errors}/{cand.requests} in all); {baseline}")

    def _check_grades(self, r: _Rollout) -> None:
        cand, champ = r.arms[r.candidate], r.arms[r.champion]
        p = self._policy
        r.test = compare((champ.passed, champ.graded), (cand.passed, cand.graded), alpha=p.alpha,
                         tau=p.mixture_tau, margin=p.margin)
        rates = (f"pass rate {cand.passed}/{cand.graded} vs the champion's {champ.passed}/{champ.graded}; "
                 f"always-valid {1 - p.alpha:.0%} interval of the difference "
                 f"[{r.test.lower:.3f}, {r.test.upper:.3f}]")
        if r.test.verdict is Verdict.WORSE:
            self._rollback(r, f"significant pass-rate drop: {rates}")
            return
        in_step = cand.graded - r.step_start_graded
        if in_step < p.min_graded:
            return
        if r.test.verdict is Verdict.NON_INFERIOR:
            self._advance(r, f"non-inferior within {p.margin}: {rates}; {in_step} graded in this step")
        elif r.strategy == "immediate" and champ.graded == 0:
            self._advance(r, f"the champion has no graded history to compare with; the candidate served "
                             f"{in_step} graded requests without a burst of errors ({rates})")

    def _advance(self, r: _Rollout, reason: str) -> None:
        if r.strategy == "canary" and r.step + 1 < len(r.steps):
            r.step += 1
            r.step_start_graded = r.arms[r.candidate].graded
            self._assigner.set_weight(r.candidate, r.steps[r.step])
            r.srm.reweigh(_split(r.steps[r.step]))
            self._decide(r, "advance", f"step {r.steps[r.step - 1]}% -> {r.steps[r.step]}%: {reason}")
            return
        r.status, r.reason = "promoted", reason
        old = self._assigner.promote()
        self._active = None
        self._decide(r, "promote", reason)
        registry = (self._hooks.registry_of(r.candidate), self._hooks.registry_of(old))
        self._finish(r, retire=old, promote=registry)

    def _rollback(self, r: _Rollout, reason: str) -> None:
        r.status, r.reason = "rolled_back", reason
        self._assigner.drop_candidate()
        self._active = None
        self._decide(r, "rollback", reason)
        self._finish(r, retire=r.candidate, promote=None)

    @staticmethod
    def _srm_reason(r: _Rollout) -> str:
        return (f"sample ratio mismatch: fresh assignments {r.srm.counts} (champion, candidate) against "
                f"weights {[round(w, 4) for w in r.srm.weights]}; log evidence {r.srm.log_evidence:.2f} >= "
                f"{r.srm.threshold:.2f}")

    # -- bookkeeping ----------------------------------------------------------------------------------

    def _plan(self, strategy: str, steps: builtins.list[int] | None) -> builtins.list[int]:
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r}; use one of {', '.join(STRATEGIES)}")
        if strategy == "immediate":
            return [100]
        if strategy == "shadow" or steps is None:
            return list(self._policy.steps)
        try:
            return RolloutPolicy.model_validate({"steps": steps}).steps
        except ValidationError as exc:
            raise ValueError(exc.errors()[0]["msg"].removeprefix("Value error, ")) from None

    def _new_rollout(self, candidate: str, strategy: str, steps: builtins.list[int]) -> _Rollout:
        p = self._policy
        arms = {self.champion: Arm(p.error_window), candidate: Arm(p.error_window)}
        if strategy == "immediate" and self.champion in self._history:
            arms[self.champion].absorb(self._history[self.champion])
        share = p.shadow_share * 100 if strategy == "shadow" else steps[0]
        return _Rollout(id=f"ro-{uuid.uuid4().hex[:12]}", candidate=candidate, champion=self.champion,
                        strategy=strategy, steps=steps, arms=arms,
                        srm=SequentialSRM(_split(share), p.srm_alpha, p.srm_concentration))

    def _activate(self, r: _Rollout) -> None:
        self._rollouts[r.id] = r
        self._active = r
        self._assigner.set_weight(r.candidate, r.weight)
        detail = (f"mirroring {self._policy.shadow_share:.0%} of requests" if r.strategy == "shadow"
                  else f"{r.weight}% of new sessions")
        self._decide(r, "start", f"{r.strategy}: {r.candidate} gets {detail}; {r.champion} is the champion")

    def _decide(self, r: _Rollout, action: str, reason: str) -> None:
        decision = {"at": time.time(), "action": action, "weights": self._weights(r), "reason": reason,
                    "test": r.test.as_dict() if r.test else None,
                    "arms": {v: arm.snapshot() for v, arm in r.arms.items()}}
        r.decisions.append(decision)
        log.info("rollout_decision", rollout=r.id, action=action, reason=reason)
        if r.mlflow_run_id is not None:
            self._log.decision(r.mlflow_run_id, len(r.decisions) - 1, decision, r.candidate, r.champion)

    def _finish(self, r: _Rollout, retire: str, promote: tuple[Any, Any] | None) -> None:
        if r.mlflow_run_id is not None:
            self._log.finish(r.mlflow_run_id, self._status(r))
        if promote is not None:
            self._log.promote(*promote)
        self._spawn(self._retire_later(retire))

    async def _retire_later(self, version: str) -> None:
        await asyncio.sleep(self._policy.drain_s)
        await self._hooks.retire(version)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        if self._loop is None or self._loop.is_closed():
            coro.close()
            return

        def create() -> None:
            task = asyncio.ensure_future(coro)
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

        self._loop.call_soon_threadsafe(create)

    def _weights(self, r: _Rollout) -> dict[str, int]:
        return {r.champion: 100 - r.weight, r.candidate: r.weight}

    def _params(self, r: _Rollout, spec: str) -> dict[str, Any]:
        return {"candidate_spec": spec, "candidate": r.candidate, "champion": r.champion,
                "strategy": r.strategy, "steps": r.steps, "rollout_id": r.id, **self._policy.model_dump()}

    def _status(self, r: _Rollout) -> dict[str, Any]:
        return {
            "id": r.id, "status": r.status, "candidate_version": r.candidate, "champion_version": r.champion,
            "strategy": r.strategy, "steps": r.steps, "step": r.step, "weights": self._weights(r),
            "arms": {v: arm.snapshot() for v, arm in r.arms.items()}, "reason": r.reason,
            "test": r.test.as_dict() if r.test else None,
            "srm": {"log_evidence": r.srm.log_evidence, "threshold": r.srm.threshold},
            "decisions": list(r.decisions), "mlflow_run_id": r.mlflow_run_id,
        }

    @staticmethod
    def _arm(arms: dict[str, Arm], version: str) -> Arm:
        # Lifetime arms only need the counts (immediate's baseline); bursts use the rollout's arms.
        if version not in arms:
            arms[version] = Arm(1)
        return arms[version]


def _split(candidate_percent: float) -> tuple[float, float]:
    return (100 - candidate_percent, candidate_percent)
