"""The FastAPI app: OpenAI-compatible chat, /v1/solve, version listing and rollouts.

``create_app(config, api_key=..., admin_key=...)`` builds the app a user runs and tests start. Start-up
deploys the champion (``config.model``); shutdown stops every replica (vLLM servers, worker processes).
Every client error is a 4xx with OpenAI's error body; backends failing is retried on the same version and,
when nothing healthy is left, a 429 with Retry-After.
"""

from __future__ import annotations

import asyncio
import gc
import os
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from typing import Any

import orjson
from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from coding_framework.config.serving import ServingConfig
from coding_framework.logs import get_logger
from coding_framework.serving.auth import Auth
from coding_framework.serving.deployments import Deployments
from coding_framework.serving.errors import APIError, bad_request, error_response
from coding_framework.serving.pool import Admission, RateLimiter
from coding_framework.serving.rollout import RolloutManager, Route
from coding_framework.serving.schemas import ChatRequest
from coding_framework.serving.solve import Solver

log = get_logger(__name__)
JSON = "application/json"
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
        champion = await self.deployments.deploy(self.config.model)
        uri = self.config.mlflow_uri or os.environ.get("MLFLOW_TRACKING_URI")
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


async def read_json(request: Request, limit: int) -> Any:
    """The body as JSON; 413 above ``limit`` bytes (checked on Content-Length and while reading)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise APIError(413, f"the request body is over {limit} bytes", code="request_too_large")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise APIError(413, f"the request body is over {limit} bytes", code="request_too_large")
        chunks.append(chunk)
    try:
        return orjson.loads(b"".join(chunks))
    except orjson.JSONDecodeError as exc:
        raise bad_request(f"the request body is not valid JSON: {exc}") from None


def _json(data: Any, version: str | None = None, status: int = 200) -> Response:
    headers = {"x-model-version": version} if version else None
    return Response(orjson.dumps(data), status_code=status, media_type=JSON, headers=headers)


def create_app(
    config: ServingConfig | None = None,
    *,
    api_key: str | None = None,
    admin_key: str | None = None,
    freeze_heap: bool = False,
) -> FastAPI:
    """The server's app. ``freeze_heap`` moves what is alive after start-up (the model, the imports) out of
    the collector's view for shorter pauses on the hot path; only for a process that is the server's own,
    since the heap belongs to the process. It is unfrozen when the app stops."""
    config = config or ServingConfig()
    server = Server(config, api_key, admin_key)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await server.start()
        if freeze_heap:
            gc.collect()
            gc.freeze()
        try:
            yield
        finally:
            await server.stop()
            if freeze_heap:
                gc.unfreeze()

    app = FastAPI(title="coding-framework model server", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.server = server
    _install_errors(app)
    _routes(app, server)
    return app


def _install_errors(app: FastAPI) -> None:
    @app.exception_handler(APIError)
    async def api_error(_: Request, exc: APIError) -> Response:
        return exc.response()

    @app.exception_handler(HTTPException)
    async def http_error(_: Request, exc: HTTPException) -> Response:
        kind = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
        return error_response(exc.status_code, str(exc.detail), kind)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError) -> Response:
        return error_response(400, str(exc.errors()[:1]))

    @app.exception_handler(Exception)
    async def internal(_: Request, exc: Exception) -> Response:
        log.error("internal_error", error_type=type(exc).__name__, error=str(exc)[:300])
        return error_response(500, "internal error (logged on the server)", "server_error")


def _routes(app: FastAPI, server: Server) -> None:
    from coding_framework.serving.routes import add_routes

    add_routes(app, server)


__all__ = ["ChatRequest", "Server", "create_app", "read_json"]
