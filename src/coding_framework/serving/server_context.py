"""What the request handlers share: the ``Server`` (auth, deployments, admission, rate limits, the solver,
the rollout manager, probes, failover, metrics and the state file), built by the app's lifespan.

Start-up serves the state file's champion when the server runs the model it was configured with before
(a ``models:/NAME@ALIAS`` champion follows the registry instead), and resumes the state's active rollout:
its candidate is deployed again and must have the same id, then its weights, counts, step, sessions and
probes carry on. The server is the rollout manager's hooks: retiring the failover version is skipped.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine, Sequence
from typing import Any

from coding_framework.config.model_ref import ModelRef
from coding_framework.config.serving import ServingConfig
from coding_framework.logs import get_logger
from coding_framework.models import ResolvedModel
from coding_framework.models.registry import PREVIOUS_ALIAS, tracking_uri
from coding_framework.serving.auth import Auth
from coding_framework.serving.deployments import Deployments
from coding_framework.serving.errors import APIError
from coding_framework.serving.failover import Failover
from coding_framework.serving.metrics import Metrics
from coding_framework.serving.pool import Admission, RateLimiter
from coding_framework.serving.rollouts.api import RolloutRequest
from coding_framework.serving.rollouts.manager import RolloutManager, Route
from coding_framework.serving.rollouts.outcomes import Outcome, Source
from coding_framework.serving.rollouts.probes import ProbeRunner, load_probe_set
from coding_framework.serving.rollouts.promotion import swap_aliases
from coding_framework.serving.solve import Solver
from coding_framework.serving.state_file import StateStore

__all__ = ["DEFAULT_MODELS", "Server"]

log = get_logger(__name__)
DEFAULT_MODELS = frozenset({"default", ""})


class Server:
    """What the request handlers share; built by the app's lifespan."""

    def __init__(self, config: ServingConfig, api_key: str | None, admin_key: str | None,
                 resolved: Sequence[ResolvedModel] = ()) -> None:
        self.config = config
        self.auth = Auth(api_key, admin_key)
        self.deployments = Deployments(config, resolved)
        self.admission = Admission(config.pool)
        self.limiter = RateLimiter(config.limits.rate_per_s, config.limits.rate_burst)
        self.solver = Solver(config, self.deployments)
        self.deployments.on_retire.append(self.solver.forget)
        self.metrics = Metrics(self)
        self.failover = Failover(config.failover, self.deployments.pools, self.metrics.failover)
        self.probes = ProbeRunner(self)
        self.manager: RolloutManager | None = None
        self.store: StateStore | None = None
        self._meta: dict[str, Any] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._decided = asyncio.Event()  # set on every rollout decision: written at once, not at the tick

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        configured, meta = str(self.config.model), {}
        if self.config.persist_state:
            self.store = await asyncio.to_thread(StateStore, self.config.state_file())
            meta = await asyncio.to_thread(self.store.meta)
        if self.store is not None and meta and meta.get("configured") != configured:
            log.info("state_discarded", path=str(self.store.path), was=meta.get("configured"), now=configured)
            await asyncio.to_thread(self.store.forget)
            meta = {}
        follow = self.config.model.registry_alias is not None
        spec = configured if follow else meta.get("champion_spec", configured)
        champion = await self.deployments.deploy(spec)
        self._meta = {**meta, "configured": configured, "champion": champion,
                      "champion_spec": self._pinned_spec(champion)}
        uri = tracking_uri(self.config.mlflow_uri)
        self.manager = RolloutManager(champion, self.config.rollout, self, tracking_uri=uri)
        self.manager.on_champion.append(self._champion_changed)
        self.manager.on_decision.append(self._wake)
        await self._resume(champion)
        if self.config.failover.enabled:
            await self._load_previous(champion)
        self.deployments.monitor.start()
        self.spawn(self._housekeeping())
        log.info("serving_ready", champion=champion, host=self.config.host, port=self.config.port,
                 state=str(self.store.path) if self.store else None)

    async def stop(self) -> None:
        self.probes.stop()
        for task in list(self._tasks):
            task.cancel()
        if self.manager is not None:
            await self.manager.aclose()
            await asyncio.to_thread(self._flush)
        if self.store is not None:
            await asyncio.to_thread(self.store.close)
        await self.deployments.close()
        await asyncio.to_thread(self.solver.close)

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Run ``coro`` off the request path, holding a reference until it ends."""
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def shadow_room(self) -> bool:
        """Shadow copies are skipped while the server is over half full: they never cost a client a 429."""
        return self.admission.pending < self.admission.capacity // 2

    @property
    def rollouts(self) -> RolloutManager:
        assert self.manager is not None, "the server has not started"
        return self.manager

    def route(self, model: str | None, session: str | None) -> Route:
        """``default``/none: the experiment decides; an alias, id, name or spec: that version, no shadow.
        The champion's traffic goes to the failover version while the champion is down."""
        if model is None or model in DEFAULT_MODELS:
            route = self.rollouts.route(session)
            champion = self.rollouts.champion
            return Route(self.failover.target(champion), route.shadow) if route.version == champion else route
        if model == "champion":
            return Route(self.failover.target(self.rollouts.champion), None)
        version = self.deployments.lookup(model)
        if version is None:
            names = ", ".join(["default", "champion", *sorted(self.deployments.pools)])
            raise APIError(
                404,
                f"the model {model!r} does not exist; served: {names}",
                param="model",
                code="model_not_found",
            )
        return Route(version, None)

    def rescue(self, version: str) -> str | None:
        """Where to retry a request ``version`` could not serve (`Failover.rescue`)."""
        return self.failover.rescue(version, self.rollouts.champion)

    def pool(self, version: str) -> Any:
        pool = self.deployments.pools.get(version)
        if pool is None:  # retired between routing and now
            raise APIError(
                429,
                f"version {version} was just retired; retry",
                type="rate_limit_error",
                code="version_retired",
                retry_after=self.config.pool.retry_after_s,
            )
        return pool

    def grade(self, version: str, outcome: Outcome, source: Source) -> None:
        self.metrics.grade(version, outcome, source)
        self.rollouts.observe_grade(version, outcome, source)

    def grade_probe_pair(self, versions: tuple[str, str], outcomes: tuple[Outcome | None, Outcome | None]
                         ) -> None:
        """One probe problem's grades, (champion, candidate); None where that version gave no answer."""
        for version, outcome in zip(versions, outcomes, strict=True):
            if outcome is not None:
                self.metrics.grade(version, outcome, "probe")
        self.rollouts.observe_probe_pair(*versions, outcomes)

    async def start_rollout(self, request: RolloutRequest) -> dict[str, Any]:
        """`RolloutManager.start`, with the probe set loaded first (a bad source is a ValueError: 400)."""
        policy = self.config.rollout
        probe = request.probe_plan(policy)
        problems = await asyncio.to_thread(load_probe_set, probe.source) if probe else None
        status = await self.rollouts.start(request.candidate, request.strategy, request.steps,
                                           budget=request.budget(policy), probe=probe)
        if probe is not None and problems is not None:
            self.probes.start(status["id"], probe, problems)
        return status

    async def rollback(self) -> dict[str, Any]:
        """Swap the champion back to ``previous`` (the registry alias, attested; else the champion this
        server replaced, by checksum): deployed first, then routed to, then the old one drained."""
        old = self.rollouts.champion
        spec, checksum = self._previous_of(old)
        if spec is None:
            raise APIError(409, f"the champion {old} has no previous version to roll back to (a models:/ "
                                f"champion needs the registry alias `previous`)", code="no_previous")
        try:
            new = await self.deployments.deploy(spec)
        except ValueError as exc:
            raise APIError(409, f"cannot load the previous version {spec}: {exc}",
                           code="no_previous") from None
        version = self.deployments.versions[new]
        if new == old or (checksum is not None and version.checksum != checksum):
            why = ("is the champion already" if new == old
                   else f"has checksum {version.checksum}, not {checksum}")
            raise APIError(409, f"the previous version {spec} {why}", code="previous_mismatch")
        self.rollouts.replace_champion(new, f"rolled back to the previous version {spec}")
        registered = self.deployments.registry_of(new)
        if registered is not None:
            await asyncio.to_thread(swap_aliases, registered, self.deployments.registry_of(old))
        self.spawn(self._retire_later(old))
        return {"status": "rolled_back", "champion_version": new, "previous_version": old,
                "checksum": version.checksum, "spec": spec}

    # -- RolloutHooks ----------------------------------------------------------------------------------

    async def deploy(self, spec: str) -> str:
        return await self.deployments.deploy(spec)

    async def retire(self, version_id: str) -> None:
        if version_id not in (self.failover.previous, self.rollouts.champion):
            await self.deployments.retire(version_id)

    def registry_of(self, version_id: str) -> tuple[str, int, str | None] | None:
        return self.deployments.registry_of(version_id)

    # -- internals -------------------------------------------------------------------------------------

    def _pinned_spec(self, version_id: str) -> str:
        """A spec naming exactly this version (a registry alias pinned to its number)."""
        v = self.deployments.versions[version_id]
        if v.registry is None:
            return v.spec
        return str(ModelRef.registered(v.registry[0], version=v.registry[1], engine=v.ref.engine))

    def _previous_of(self, champion: str) -> tuple[str | None, str | None]:
        registered = self.deployments.registry_of(champion)
        if registered is not None:
            return str(ModelRef.registered(registered[0], alias=PREVIOUS_ALIAS)), None
        previous = self._meta.get("previous")
        return (previous["spec"], previous["checksum"]) if previous else (None, None)

    def _champion_changed(self, old: str, new: str) -> None:
        if old in self.deployments.versions:
            self._meta["previous"] = {"spec": self._pinned_spec(old),
                                      "checksum": self.deployments.versions[old].checksum}
        self._meta["champion"], self._meta["champion_spec"] = new, self._pinned_spec(new)
        if self.config.failover.enabled:
            stale, self.failover.previous = self.failover.previous, old
            self.failover.active = False
            if stale is not None and stale not in (old, new) and self._loop is not None:
                self._loop.call_soon_threadsafe(lambda: self.spawn(self.retire(stale)))

    def _wake(self, _: str) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._decided.set)

    async def _retire_later(self, version: str) -> None:
        await asyncio.sleep(self.config.rollout.drain_s)
        await self.retire(version)

    async def _resume(self, champion: str) -> None:
        assert self.manager is not None
        if self.store is None:
            return
        records, active = await asyncio.to_thread(self.store.rollouts)
        record = next((r for r in records if r["id"] == active), None)
        if record is not None and record["champion"] != champion:
            log.warning("rollout_not_resumed", rollout=active, reason="the champion changed")
            record = active = None
        if record is not None:
            try:
                candidate = await self.deployments.deploy(record["candidate_spec"])
            except ValueError as exc:
                candidate = str(exc)
            if candidate != record["candidate"]:
                log.warning("rollout_not_resumed", rollout=active, candidate=candidate[:200])
                active = None
        pins = await asyncio.to_thread(self.store.pins)
        self.manager.restore(records, active, pins)
        r = self.manager.active
        if r is not None and r.probe is not None and r.status == "running":
            problems = await asyncio.to_thread(load_probe_set, r.probe.source)
            self.probes.start(r.id, r.probe, problems, sent=r.arms[r.candidate].graded_by("probe"))

    async def _load_previous(self, champion: str) -> None:
        spec = str(self.config.failover.previous) if self.config.failover.previous else None
        if spec is None:
            spec = self._previous_of(champion)[0]
        if spec is None:
            log.warning("failover_without_previous", champion=champion)
            return
        try:
            self.failover.previous = await self.deployments.deploy(spec)
        except ValueError as exc:
            log.warning("failover_without_previous", champion=champion, error=str(exc)[:200])

    async def _housekeeping(self) -> None:
        """Time budgets and the state file, every ``state_flush_s`` and right after a rollout decision."""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._decided.wait(), self.config.state_flush_s)
            self._decided.clear()
            try:
                self.rollouts.tick()
                await asyncio.to_thread(self._flush)
            except Exception as exc:  # a full disk must not stop serving
                log.warning("state_write_failed", error=str(exc)[:200])

    def _flush(self) -> None:
        records, pins = self.rollouts.export_state()
        if self.store is None:
            return
        active = self.rollouts.active
        self.store.write(dict(self._meta), records, active.id if active else None, pins)
