"""The endpoints. Experiment traffic (``model`` default) is observed per version; shadow copies run in the
background, are measured and graded, and never reach the client. Every request is counted in the metrics;
a request the champion cannot serve is retried once on the failover version (``serving.failover``)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from coding_framework.logs import get_logger
from coding_framework.serving.errors import APIError, bad_request
from coding_framework.serving.http import json_response, read_json
from coding_framework.serving.metrics import CONTENT_TYPE
from coding_framework.serving.rollouts.api import RolloutRequest, first_error
from coding_framework.serving.rollouts.manager import RolloutConflict, RolloutFinished
from coding_framework.serving.schemas import ChatRequest, SolveRequest, parse_chat, parse_solve

if TYPE_CHECKING:
    from coding_framework.serving.server_context import Server

log = get_logger(__name__)


def add_routes(app: FastAPI, server: Server) -> None:
    limits = server.config.limits

    async def health(request: Request) -> Response:
        return json_response({"status": "ok", "champion": server.rollouts.champion})

    async def models(request: Request) -> Response:
        server.auth.inference(request)
        return json_response({"object": "list", "data": server.deployments.models()})

    async def chat(request: Request) -> Response:
        server.limiter.check(server.auth.inference(request))
        req = parse_chat(await read_json(request, limits.max_body_bytes), request.headers, limits)
        route = server.route(req.model, req.session)
        routed = req.model is None or req.model in ("default", "")
        asked, req.role = req.role, server.deployments.role_for(route.version, req.role)
        if req.stream:
            return await _stream(server, req, route.version, routed)
        body, version = await _chat_once(server, req, route.version, routed)
        if route.shadow is not None and server.shadow_room() and _serves(server, route.shadow, asked):
            server.spawn(_chat_once(server, req, route.shadow, True))
        return Response(body, media_type="application/json", headers={"x-model-version": version})

    async def solve(request: Request) -> Response:
        server.limiter.check(server.auth.inference(request))
        body = await read_json(request, limits.max_body_bytes)
        req = parse_solve(body, request.headers, limits, server.config.solve.max_rounds)
        model = body.get("model") if isinstance(body.get("model"), str) else None
        route = server.route(model, req.session)
        routed = model is None or model in ("default", "")
        async with server.admission.slot():
            out, version = await _solve_once(server, req, route.version, routed)
        if route.shadow is not None and req.tests is not None and server.shadow_room():
            server.spawn(_shadow_solve(server, req, route.shadow))
        result = {
            "code": out.code,
            "passed": out.passed,
            "rounds": out.rounds,
            "model_version": version,
        }
        return json_response(result, version)

    async def start_rollout(request: Request) -> Response:
        server.auth.admin(request)
        try:
            req = RolloutRequest.model_validate(await read_json(request, limits.max_body_bytes))
        except ValidationError as exc:
            param, message = first_error(exc)
            raise bad_request(message, param) from None
        try:
            status = await server.start_rollout(req)
        except RolloutConflict as exc:
            raise APIError(409, str(exc), code="rollout_running") from None
        except ValueError as exc:
            param = "probe" if str(exc).startswith("probe source") else "candidate"
            raise bad_request(str(exc), param) from None
        return json_response(status, status=201)

    async def abort_rollout(request: Request) -> Response:
        server.auth.admin(request)
        rollout_id = request.path_params["rollout_id"]
        try:
            return json_response(server.rollouts.abort(rollout_id))
        except KeyError:
            raise _no_rollout(rollout_id) from None
        except RolloutFinished as exc:
            raise APIError(409, str(exc), param="id", code="rollout_finished") from None

    async def rollback(request: Request) -> Response:
        server.auth.admin(request)
        return json_response(await server.rollback())

    async def metrics(request: Request) -> Response:
        server.auth.admin(request)
        return Response(server.metrics.render(), media_type=CONTENT_TYPE)

    async def list_rollouts(request: Request) -> Response:
        server.auth.admin(request)
        return json_response({"object": "list", "data": server.rollouts.list()})

    async def rollout_status(request: Request) -> Response:
        server.auth.admin(request)
        rollout_id = request.path_params["rollout_id"]
        try:
            return json_response(server.rollouts.status(rollout_id))
        except KeyError:
            raise _no_rollout(rollout_id) from None


    # Plain Starlette routes: FastAPI's per-request dependency and serialization layer is not needed here.
    app.add_route("/health", health, methods=["GET"])
    app.add_route("/v1/models", models, methods=["GET"])
    app.add_route("/v1/chat/completions", chat, methods=["POST"])
    app.add_route("/v1/solve", solve, methods=["POST"])
    app.add_route("/v1/rollouts", start_rollout, methods=["POST"])
    app.add_route("/v1/rollouts", list_rollouts, methods=["GET"])
    app.add_route("/v1/rollouts/{rollout_id}", rollout_status, methods=["GET"])
    app.add_route("/v1/rollouts/{rollout_id}/abort", abort_rollout, methods=["POST"])
    app.add_route("/v1/rollback", rollback, methods=["POST"])
    app.add_route("/metrics", metrics, methods=["GET"])


def _serves(server: Server, version: str, role: str | None) -> bool:
    """Whether ``version`` takes calls as ``role`` (a shadow may lack an adapter the champion has)."""
    try:
        server.deployments.role_for(version, role)
    except APIError:
        return False
    return True


async def _chat_once(server: Server, req: ChatRequest, version: str, routed: bool) -> tuple[bytes, str]:
    """One non-streamed completion on ``version`` (retries stay on it; a champion that cannot serve it
    hands it to the failover version), observed when ``routed``; returns the body and who answered."""
    began = time.perf_counter()
    try:
        async with server.admission.slot():
            answer = await server.pool(version).call(lambda r: r.chat(req, version))
    except APIError as exc:
        _failed(server, version, exc, began, routed)
        rescue = server.rescue(version) if exc.code == "backend_unavailable" else None
        if rescue is None:
            raise
        return await _chat_once(server, req, rescue, routed)
    latency = time.perf_counter() - began
    server.metrics.request(version, latency, None, answer.tokens)
    if routed:
        server.rollouts.observe(version, latency_s=latency, error=False, tokens=answer.tokens)
    return answer.body, version


def _failed(server: Server, version: str, exc: APIError, began: float, routed: bool) -> None:
    server.metrics.request(version, 0.0, exc.code or str(exc.status), 0)
    if routed and exc.status == 429 and exc.code == "backend_unavailable":
        server.rollouts.observe(version, latency_s=time.perf_counter() - began, error=True, tokens=0)


async def _stream(server: Server, req: ChatRequest, version: str, routed: bool) -> Response:
    """Server-sent events; the admission slot is held until the stream ends."""
    began = time.perf_counter()
    server.admission.enter()
    try:
        await server.admission.acquire_running()
    except BaseException:
        server.admission.leave()
        raise
    try:
        chunks = await server.pool(version).call(lambda r: r.stream(req, version))
    except BaseException:
        server.admission.release_running()
        server.admission.leave()
        raise

    async def relay() -> AsyncIterator[bytes]:
        try:
            async for chunk in chunks:
                yield chunk
        finally:
            server.admission.release_running()
            server.admission.leave()
            latency = time.perf_counter() - began
            server.metrics.request(version, latency, None, 0)
            if routed:
                server.rollouts.observe(version, latency_s=latency, error=False, tokens=0)

    headers = {"x-model-version": version, "cache-control": "no-cache"}
    return StreamingResponse(relay(), media_type="text/event-stream", headers=headers)


async def _solve_once(server: Server, req: SolveRequest, version: str, routed: bool) -> tuple[Any, str]:
    began = time.perf_counter()
    try:
        out = await server.solver.solve(version, req)
    except APIError as exc:
        _failed(server, version, exc, began, routed)
        rescue = server.rescue(version) if exc.code == "backend_unavailable" else None
        if rescue is None:
            raise
        return await _solve_once(server, req, rescue, routed)
    latency = time.perf_counter() - began
    server.metrics.request(version, latency, None, out.tokens)
    if routed:
        server.rollouts.observe(version, latency_s=latency, error=False, tokens=out.tokens)
        if out.outcome is not None:
            server.grade(version, out.outcome, "client")
    return out, version


async def _shadow_solve(server: Server, req: SolveRequest, version: str) -> None:
    try:
        await _solve_once(server, req, version, True)
    except APIError as exc:
        log.info("shadow_failed", version=version, status=exc.status, code=exc.code)


def _no_rollout(rollout_id: str) -> APIError:
    return APIError(404, f"no rollout {rollout_id!r}", param="id", code="rollout_not_found")
