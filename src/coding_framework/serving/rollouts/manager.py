"""Rollouts: move traffic from the champion version to a candidate, gated by an always-valid test.

Strategies (``RolloutPolicy`` holds the numbers):
- ``canary``: the candidate gets ``steps`` percent of new sessions in turn (10 -> 50 -> 100). A step ends
  only when the candidate has ``min_graded`` graded requests within it AND the sequential tests find it
  non-inferior: its pass rate within ``margin`` and ``relative_margin`` of the champion's, and likewise its
  rate of answers free of each guardrail's failure mode. Passing the last step promotes. Never a timer.
- ``immediate``: one step of 100%: the swap is at once, the watch stays on; the baseline is the champion's
  history before the swap (when it has no grades, ``min_graded`` candidate grades without an error burst
  and with at least one pass promote).
- ``shadow``: the client always gets the champion's answer; ``shadow_share`` of requests also go to the
  candidate, whose answer is graded and dropped. Non-inferior after ``min_graded`` grades promotes.

Grades come from clients' /v1/solve tests and from the rollout's probe set (``rollouts.probes``), whose
problems go to both arms and are reported as pairs (``observe_probe_pair``); the tests compare the arms
source by source, probes pair by pair (``rollouts.stats.compare_strata``). At any moment a significantly lower
pass rate, a guardrail (``rollouts.guardrails.GUARDRAILS``: a significantly higher rate of unparseable,
crashing or timing-out answers, or an error burst: ``error_burst`` of the last ``error_window`` candidate
requests failed and its error rate is significantly above the champion's, no grades needed) or a
sample-ratio mismatch rolls back: no request reaches the candidate after that. The rollback tests share the
error budget ``alpha``. A rollout that exhausts its budget (``max_duration_s``, ``max_graded``) ends
``inconclusive`` and rolls back or holds; ``abort`` rolls back at once (``aborted``).

Decisions run inside ``observe``/``observe_grade``/``tick`` (cheap, any thread); retiring versions, moving
registry aliases and MLflow logging run in the background (see ``rollouts.promotion``). ``export_state`` and
``restore`` carry the rollouts and sticky sessions across a restart (``serving.state_file``).
"""

from __future__ import annotations

import asyncio
import builtins
import random
import threading
import time
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol, get_args

from pydantic import ValidationError

from coding_framework.config.rollout import RolloutPolicy, RolloutStrategy
from coding_framework.logs import get_logger
from coding_framework.serving.rollouts.api import Budget, DecisionAction, ProbePlan, RolloutPhase
from coding_framework.serving.rollouts.arms import Arm
from coding_framework.serving.rollouts.assignment import Assigner
from coding_framework.serving.rollouts.guardrails import PASS_RATE, Watch, error_budget, run_guardrails
from coding_framework.serving.rollouts.outcomes import SOURCES, Outcome, Source, strata
from coding_framework.serving.rollouts.promotion import RolloutLog
from coding_framework.serving.rollouts.record import Rollout
from coding_framework.serving.rollouts.stats import SequentialSRM, Verdict, compare_strata

__all__ = ["RolloutConflict", "RolloutFinished", "RolloutHooks", "RolloutManager", "Route"]

log = get_logger(__name__)

Pins = list[tuple[str, str]]  # (session, version)


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


class RolloutFinished(Exception):
    """The rollout has ended already: nothing to abort (HTTP 409)."""


class RolloutManager:
    """Routes requests between the champion and at most one running rollout's candidate.

    ``on_champion`` callbacks get (old, new) whenever the champion changes (promotion or
    ``replace_champion``), ``on_decision`` callbacks the rollout id of every decision, on the thread that
    made it.
    """

    def __init__(
        self, champion: str, policy: RolloutPolicy, hooks: RolloutHooks, *, tracking_uri: str | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self._policy = policy
        self._alphas = error_budget(policy.alpha, policy.pass_share)
        self._hooks = hooks
        self._rng = rng or random.Random()
        self._assigner = Assigner(champion, policy.pin_table_size, self._rng)
        self._history: dict[str, Arm] = {}
        self._rollouts: dict[str, Rollout] = {}
        self._active: Rollout | None = None
        self._starting = False
        self._lock = threading.RLock()
        self._log = RolloutLog(tracking_uri)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._dirty: set[str] = set()
        self.on_champion: list[Callable[[str, str], None]] = []
        self.on_decision: list[Callable[[str], None]] = []

    @property
    def champion(self) -> str:
        return self._assigner.champion

    @property
    def active(self) -> Rollout | None:
        """The rollout that routes traffic now (running, or held after an inconclusive end)."""
        return self._active

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
                self._guard(r, "errors")

    def observe_grade(self, version: str, outcome: Outcome, source: Source = "client") -> None:
        """A graded answer of ``version``: a client's tests or a probe's (probes skip the history)."""
        with self._lock:
            if source == "client":
                self._arm(self._history, version).record_grade(outcome)
            r = self._active
            if r is None or version not in r.arms:
                return
            r.arms[version].record_grade(outcome, source)
            self._check_grades(r)

    def observe_probe_pair(self, champion: str, candidate: str,
                           outcomes: tuple[Outcome | None, Outcome | None]) -> None:
        """One probe problem's answers by ``champion`` and ``candidate`` (None: that version failed to
        answer it). Both graded: one pair of the paired probe test; each grade also counts per arm."""
        with self._lock:
            r = self._active
            if r is None or (r.champion, r.candidate) != (champion, candidate):
                return
            for version, outcome in zip((champion, candidate), outcomes, strict=True):
                if outcome is None:
                    r.arms[version].record_probe_error()
                else:
                    r.arms[version].record_grade(outcome, "probe")
            a, b = outcomes
            if a is None or b is None:
                return
            r.pairs[(a, b)] += 1
            self._check_grades(r)

    def tick(self) -> None:
        """Time-based checks (the duration budget); the server calls it about once a second."""
        with self._lock:
            r = self._active
            if r is not None and r.status == "running":
                self._check_budget(r)

    async def start(self, candidate_spec: str, strategy: RolloutStrategy, steps: list[int] | None, *,
                    budget: Budget | None = None, probe: ProbePlan | None = None) -> dict[str, Any]:
        """Deploy ``candidate_spec`` and start moving traffic to it. ValueError: bad input (a 4xx)."""
        plan = self._plan(strategy, steps)
        p = self._policy
        budget = budget or Budget(p.max_duration_s, p.max_graded, p.on_inconclusive)
        with self._lock:
            if self._active is not None or self._starting:
                running = self._active.id if self._active else "another rollout"
                raise RolloutConflict(f"rollout {running} is still running; wait until it ends or abort it "
                                      f"(POST /v1/rollouts/{running}/abort)")
            self._starting = True
            self._loop = asyncio.get_running_loop()
        try:
            candidate = await self._hooks.deploy(candidate_spec)
            if candidate == self.champion:
                raise ValueError(f"{candidate_spec!r} is the champion ({candidate}) already; "
                                 f"nothing to roll out")
            r = self._new_rollout(candidate, strategy, plan, budget, candidate_spec, probe)
            r.mlflow_run_id = await asyncio.to_thread(self._log.open, self._params(r),
                                                      self._hooks.registry_of(candidate))
            with self._lock:
                self._activate(r)
        finally:
            self._starting = False
        return self.status(r.id)

    def abort(self, rollout_id: str, reason: str = "aborted by an operator") -> dict[str, Any]:
        """Roll the rollout back at once; KeyError for an unknown id, RolloutFinished if it has ended."""
        with self._lock:
            r = self._rollouts[rollout_id]
            if r is not self._active:
                raise RolloutFinished(f"rollout {rollout_id} has ended already ({r.status}): nothing to "
                                      f"abort")
            self._end(r, "aborted", "abort", reason)
            return r.to_status().model_dump(mode="json")

    def replace_champion(self, version: str, reason: str) -> str:
        """Make ``version`` the champion for everyone now (aborting a rollout in progress); returns the
        old champion, which the caller retires."""
        with self._lock:
            if self._active is not None:
                self._end(self._active, "aborted", "abort", f"aborted: {reason}")
            old = self._assigner.replace_champion(version)
            log.info("champion_replaced", old=old, new=version, reason=reason)
        for callback in self.on_champion:
            callback(old, version)
        return old

    def status(self, rollout_id: str) -> dict[str, Any]:
        """The contract's status object (`RolloutStatus`, as JSON); KeyError for an unknown id."""
        with self._lock:
            return self._rollouts[rollout_id].to_status().model_dump(mode="json")

    def list(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r.to_status().model_dump(mode="json") for r in self._rollouts.values()]

    def export_state(self) -> tuple[builtins.list[dict[str, Any]], tuple[bool, Pins]]:
        """What changed since the last call, for the state file: the records of the rollouts that changed
        (the active one always) and the sticky-session pins (`Assigner.drain_pins`)."""
        with self._lock:
            ids = self._dirty | ({self._active.id} if self._active else set())
            self._dirty = set()
            records = [self._rollouts[i].to_state() for i in ids]
            return records, self._assigner.drain_pins()

    def restore(self, records: builtins.list[dict[str, Any]], active: str | None,
                pins: Pins) -> None:
        """Load rollouts from the state file. ``active`` (its candidate deployed again by the caller) routes
        traffic as before, with its weights, counts, step and sessions."""
        p = self._policy
        with self._lock:
            self._loop = asyncio.get_running_loop()
            for data in records:
                r = Rollout.from_state(data, p.error_window, p.srm_alpha, p.srm_concentration)
                self._rollouts[r.id] = r
                if r.id == active:
                    self._active = r
                    self._assigner.set_weight(r.candidate, r.weight)
                    if r.mlflow_run_id is not None:
                        self._log.attach(r.mlflow_run_id, self._hooks.registry_of(r.candidate))
                    self._decide(r, "resume", f"resumed after a restart at {r.weight}% of new sessions")
            self._assigner.load_pins(pins)

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await asyncio.to_thread(self._log.close)

    # -- decisions (called with the lock held) ---------------------------------------------------------

    def _guard(self, r: Rollout, watch: Watch) -> bool:
        """Roll back if a guardrail watching ``watch`` trips; whether one did. Grade guardrails keep their
        tests on the rollout (they gate advancing)."""
        findings = run_guardrails(watch, r.arms[r.champion], r.arms[r.candidate], self._alphas, self._policy,
                                  r.pairs)
        if watch == "grades":
            r.guardrail_tests = {name: f.test for name, f in findings.items() if f.test is not None}
        reason = next((f.reason for f in findings.values() if f.reason is not None), None)
        if reason is not None:
            self._rollback(r, reason)
        return reason is not None

    def _check_grades(self, r: Rollout) -> None:
        cand, champ = r.arms[r.candidate], r.arms[r.champion]
        p, alpha = self._policy, self._alphas[PASS_RATE]
        r.test = compare_strata(strata(champ.outcomes, cand.outcomes, frozenset({Outcome.PASSED}), r.pairs),
                                alpha=alpha, tau=p.mixture_tau, margin=p.margin,
                                relative_margin=p.relative_margin)
        rates = (f"pass rate {cand.rates()} vs the champion's {champ.rates()}; always-valid "
                 f"{1 - alpha:.1%} interval of the difference [{r.test.lower:.3f}, {r.test.upper:.3f}]")
        if r.test.verdict is Verdict.WORSE:
            self._rollback(r, f"significant pass-rate drop: {rates}")
            return
        if self._guard(r, "grades"):
            return
        if r.held:
            return
        in_step = cand.all_graded - r.step_start_graded
        if in_step >= p.min_graded:
            cleared = all(t.verdict is Verdict.NON_INFERIOR for t in r.guardrail_tests.values())
            if r.test.verdict is Verdict.NON_INFERIOR and cleared:
                self._advance(r, f"non-inferior within {p.margin} and {p.relative_margin:.0%} of the "
                                 f"champion's rate: {rates} (relative lower bound "
                                 f"{r.test.relative_lower:.4f}); every guardrail non-inferior too; {in_step} "
                                 f"graded in this step")
                return
            passed = sum(cand.passed_by(s) for s in SOURCES)
            if r.strategy == "immediate" and champ.all_graded == 0 and passed:
                # Nothing to compare with: the candidate must at least pass something (one with random
                # weights passes nothing and waits for its budget).
                self._advance(r, f"the champion has no graded history to compare with; the candidate "
                                 f"served {in_step} graded requests without a burst of errors and passed "
                                 f"{passed} ({rates})")
                return
        self._check_budget(r)

    def _check_budget(self, r: Rollout) -> None:
        b, graded = r.budget, r.arms[r.candidate].all_graded
        if b.max_graded is not None and graded >= b.max_graded:
            spent = f"{graded} graded candidate answers of a budget of {b.max_graded}"
        elif b.max_duration_s is not None and r.elapsed_s >= b.max_duration_s:
            spent = f"{r.elapsed_s:.0f} s of a budget of {b.max_duration_s:g} s"
        else:
            return
        test = f"last interval [{r.test.lower:.3f}, {r.test.upper:.3f}]" if r.test else "no grades"
        reason = f"inconclusive: the budget ran out ({spent}) without a verdict ({test})"
        if b.on_inconclusive == "hold":
            r.status, r.held, r.reason = "inconclusive", True, f"{reason}; holding the split"
            self._dirty.add(r.id)
            self._decide(r, "hold", r.reason)
            return
        self._end(r, "inconclusive", "rollback", f"{reason}; rolled back")

    def _advance(self, r: Rollout, reason: str) -> None:
        if r.strategy == "canary" and r.step + 1 < len(r.steps):
            r.step += 1
            r.step_start_graded = r.arms[r.candidate].all_graded
            self._assigner.set_weight(r.candidate, r.steps[r.step])
            r.srm.reweigh(_split(r.steps[r.step]))
            self._decide(r, "advance", f"step {r.steps[r.step - 1]}% -> {r.steps[r.step]}%: {reason}")
            return
        r.status, r.reason = "promoted", reason
        old = self._assigner.promote()
        self._active = None
        self._dirty.add(r.id)
        self._decide(r, "promote", reason)
        registry = (self._hooks.registry_of(r.candidate), self._hooks.registry_of(old))
        self._finish(r, retire=old, promote=registry)
        for callback in self.on_champion:
            callback(old, r.candidate)

    def _rollback(self, r: Rollout, reason: str) -> None:
        self._end(r, "rolled_back", "rollback", reason)

    def _end(self, r: Rollout, status: RolloutPhase, action: DecisionAction, reason: str) -> None:
        """Route everyone to the champion; the candidate is retired after the drain."""
        r.status, r.held, r.reason = status, False, reason
        self._assigner.drop_candidate()
        self._active = None
        self._dirty.add(r.id)
        self._decide(r, action, reason)
        self._finish(r, retire=r.candidate, promote=None)

    @staticmethod
    def _srm_reason(r: Rollout) -> str:
        return (f"sample ratio mismatch: fresh assignments {r.srm.counts} (champion, candidate) against "
                f"weights {[round(w, 4) for w in r.srm.weights]}; log evidence {r.srm.log_evidence:.2f} >= "
                f"{r.srm.threshold:.2f}")

    # -- bookkeeping ----------------------------------------------------------------------------------

    def _plan(self, strategy: RolloutStrategy, steps: builtins.list[int] | None) -> builtins.list[int]:
        names = get_args(RolloutStrategy)
        if strategy not in names:
            raise ValueError(f"unknown strategy {strategy!r}; use one of {', '.join(names)}")
        if strategy == "immediate":
            return [100]
        if strategy == "shadow" or steps is None:
            return list(self._policy.steps)
        try:
            return RolloutPolicy.model_validate({"steps": steps}).steps
        except ValidationError as exc:
            raise ValueError(exc.errors()[0]["msg"].removeprefix("Value error, ")) from None

    def _new_rollout(self, candidate: str, strategy: RolloutStrategy, steps: builtins.list[int],
                     budget: Budget, spec: str, probe: ProbePlan | None) -> Rollout:
        p = self._policy
        arms = {self.champion: Arm(p.error_window), candidate: Arm(p.error_window)}
        if strategy == "immediate" and self.champion in self._history:
            arms[self.champion].absorb(self._history[self.champion])
        share = p.shadow_share * 100 if strategy == "shadow" else steps[0]
        return Rollout(id=f"ro-{uuid.uuid4().hex[:12]}", candidate=candidate, champion=self.champion,
                       strategy=strategy, steps=steps, arms=arms, budget=budget, candidate_spec=spec,
                       probe=probe, srm=SequentialSRM(_split(share), p.srm_alpha, p.srm_concentration))

    def _activate(self, r: Rollout) -> None:
        self._rollouts[r.id] = r
        self._active = r
        self._assigner.set_weight(r.candidate, r.weight)
        detail = (f"mirroring {self._policy.shadow_share:.0%} of requests" if r.strategy == "shadow"
                  else f"{r.weight}% of new sessions")
        probes = f"; probes from {r.probe.source} at {r.probe.rate_per_s:g}/s" if r.probe else ""
        self._decide(r, "start", f"{r.strategy}: {r.candidate} gets {detail}; {r.champion} is the "
                                 f"champion{probes}")

    def _decide(self, r: Rollout, action: DecisionAction, reason: str) -> None:
        decision = {"at": time.time(), "action": action, "weights": r.weights(), "reason": reason,
                    "test": r.test.as_dict() if r.test else None,
                    "arms": {v: arm.snapshot() for v, arm in r.arms.items()}}
        r.decisions.append(decision)
        self._dirty.add(r.id)
        log.info("rollout_decision", rollout=r.id, action=action, reason=reason)
        for callback in self.on_decision:
            callback(r.id)
        if r.mlflow_run_id is not None:
            self._log.decision(r.mlflow_run_id, len(r.decisions) - 1, decision, r.candidate, r.champion)

    def _finish(self, r: Rollout, retire: str, promote: tuple[Any, Any] | None) -> None:
        if r.mlflow_run_id is not None:
            self._log.finish(r.mlflow_run_id, r.to_status().model_dump(mode="json"))
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

    def _params(self, r: Rollout) -> dict[str, Any]:
        return {"candidate_spec": r.candidate_spec, "candidate": r.candidate, "champion": r.champion,
                "strategy": r.strategy, "steps": r.steps, "rollout_id": r.id, "budget": vars(r.budget),
                "probe": vars(r.probe) if r.probe else None, **self._policy.model_dump()}

    @staticmethod
    def _arm(arms: dict[str, Arm], version: str) -> Arm:
        # Lifetime arms only need the counts (immediate's baseline); bursts use the rollout's arms.
        if version not in arms:
            arms[version] = Arm(1)
        return arms[version]


def _split(candidate_percent: float) -> tuple[float, float]:
    return (100 - candidate_percent, candidate_percent)
