"""The FastAPI app: OpenAI-compatible chat, /v1/solve, version listing and rollouts.

``create_app(config, api_key=..., admin_key=...)`` builds the app a user runs and tests start. Start-up
deploys the champion (``config.model``); shutdown stops every replica (vLLM servers, worker processes).
Every client error is a 4xx with OpenAI's error body; backends failing is retried on the same version and,
when nothing healthy is left, a 429 with Retry-After.
"""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from coding_framework.config.serving import ServingConfig
from coding_framework.logs import get_logger
from coding_framework.serving.errors import APIError, error_response
from coding_framework.serving.routes import add_routes
from coding_framework.serving.server_context import Server

log = get_logger(__name__)


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
    add_routes(app, server)
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


__all__ = ["create_app"]
