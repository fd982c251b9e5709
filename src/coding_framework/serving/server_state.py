"""What the request handlers share: the ``Server`` (auth, deployments, admission, rate limits, the solver
and the rollout manager), built by the app's lifespan."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from coding_framework.config.serving import ServingConfig
from coding_framework.logs import get_logger
from coding_framework.models.registry import tracking_uri
from coding_framework.serving.auth import Auth
from coding_framework.serving.deployments import Deployments
from coding_framework.serving.errors import APIError
from coding_framework.serving.pool import Admission, RateLimiter
from coding_framework.serving.rollout import RolloutManager, Route
from coding_framework.serving.solve import Solver

__all__ = ["DEFAULT_MODELS", "Server"]

log = get_logger(__name__)
DEFAULT_MODELS = frozenset({"default", ""})


class Server:
    """What the request handlers share; built by the app's lifespan."""

    def __init__(self, config: ServingConfig, api_key: str | None, admin_key: str | None) -> None:
        self.config = config
        self.auth = Auth(api_key, admin_key)
        self.deployments = Deployments(config)
        self.admission = Admission(config.pool)
        self.limiter = RateLimiter(config.limits.rate_per_s, config.limits.rate_burst)
        self.solver = Solver(config, self.deployments)
        self.deployments.on_retire.append(self.solver.forget)
        self.manager: RolloutManager | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    async def start(self) -> None:
        champion = await self.deployments.deploy(str(self.config.model))
        uri = tracking_uri(self.config.mlflow_uri)
        self.manager = RolloutManager(champion, self.config.rollout, self.deployments, tracking_uri=uri)
        self.deployments.monitor.start()
        log.info("serving_ready", champion=champion, host=self.config.host, port=self.config.port)

    async def stop(self) -> None:
        if self.manager is not None:
            await self.manager.aclose()
        for task in list(self._tasks):
            task.cancel()
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
        """``default``/none: the experiment decides; an alias, id, name or spec: that version, no shadow."""
        if model is None or model in DEFAULT_MODELS:
            return self.rollouts.route(session)
        if model == "champion":
            return Route(self.rollouts.champion, None)
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
