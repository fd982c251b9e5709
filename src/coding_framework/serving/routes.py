"""The endpoints. Experiment traffic (``model`` default) is observed per version; shadow copies run in the
background, are measured and graded, and never reach the client."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from coding_framework.logs import get_logger
from coding_framework.serving.errors import APIError, bad_request
from coding_framework.serving.http import json_response, read_json
from coding_framework.serving.rollout import RolloutConflict
from coding_framework.serving.schemas import ChatRequest, SolveRequest, parse_chat, parse_solve

if TYPE_CHECKING:
    from coding_framework.serving.server_state import Server

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
        body, _ = await _chat_once(server, req, route.version, routed)
        if route.shadow is not None and server.shadow_room() and _serves(server, route.shadow, asked):
            server.spawn(_chat_once(server, req, route.shadow, True))
        return Response(body, media_type="application/json", headers={"x-model-version": route.version})

    async def solve(request: Request) -> Response:
        server.limiter.check(server.auth.inference(request))
        body = await read_json(request, limits.max_body_bytes)
        req = parse_solve(body, request.headers, limits, server.config.solve.max_rounds)
        model = body.get("model") if isinstance(body.get("model"), str) else None
        route = server.route(model, req.session)
        routed = model is None or model in ("default", "")
        async with server.admission.slot():
            out = await _solve_once(server, req, route.version, routed)
        if route.shadow is not None and req.tests is not None and server.shadow_room():
            server.spawn(_shadow_solve(server, req, route.shadow))
        result = {
            "code": out.code,
            "passed": out.passed,
            "rounds": out.rounds,
            "model_version": route.version,
        }
        return json_response(result, route.version)

    async def start_rollout(request: Request) -> Response:
        server.auth.admin(request)
        candidate, strategy, steps = _rollout_request(await read_json(request, limits.max_body_bytes))
        try:
            status = await server.rollouts.start(candidate, strategy, steps)
        except RolloutConflict as exc:
            raise APIError(409, str(exc), code="rollout_running") from None
        except ValueError as exc:
            raise bad_request(str(exc), "candidate") from None
        return json_response(status, status=201)

    async def list_rollouts(request: Request) -> Response:
        server.auth.admin(request)
        return json_response({"object": "list", "data": server.rollouts.list()})

    async def rollout_status(request: Request) -> Response:
        server.auth.admin(request)
        rollout_id = request.path_params["rollout_id"]
        try:
            return json_response(server.rollouts.status(rollout_id))
        except KeyError:
            raise APIError(404, f"no rollout {rollout_id!r}", param="id", code="rollout_not_found") from None


    # Plain Starlette routes: FastAPI's per-request dependency and serialization layer is not needed here.
    app.add_route("/health", health, methods=["GET"])
    app.add_route("/v1/models", models, methods=["GET"])
    app.add_route("/v1/chat/completions", chat, methods=["POST"])
    app.add_route("/v1/solve", solve, methods=["POST"])
    app.add_route("/v1/rollouts", start_rollout, methods=["POST"])
    app.add_route("/v1/rollouts", list_rollouts, methods=["GET"])
    app.add_route("/v1/rollouts/{rollout_id}", rollout_status, methods=["GET"])


def _serves(server: Server, version: str, role: str | None) -> bool:
    """Whether ``version`` takes calls as ``role`` (a shadow may lack an adapter the champion has)."""
    try:
        server.deployments.role_for(version, role)
    except APIError:
        return False
    return True


def _rollout_request(body: Any) -> tuple[str, str, list[int] | None]:
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    candidate, strategy, steps = body.get("candidate"), body.get("strategy", "canary"), body.get("steps")
    if not isinstance(candidate, str) or not candidate.strip():
        raise bad_request("candidate must be a model spec string", "candidate")
    if strategy not in ("immediate", "shadow", "canary"):
        raise bad_request("strategy must be immediate, shadow or canary", "strategy")
    if steps is not None and (
        not isinstance(steps, list)
        or not steps
        or not all(isinstance(s, int) and not isinstance(s, bool) for s in steps)
    ):
        raise bad_request("steps must be a list of integer percents, e.g. [10, 50, 100]", "steps")
    return candidate, strategy, steps


async def _chat_once(server: Server, req: ChatRequest, version: str, routed: bool) -> tuple[bytes, int]:
    """One non-streamed completion on ``version`` (retries stay on it), observed when ``routed``."""
    began = time.perf_counter()
    try:
        async with server.admission.slot():
            answer = await server.pool(version).call(lambda r: r.chat(req, version))
    except APIError as exc:
        if routed and exc.status == 429 and exc.code == "backend_unavailable":
            server.rollouts.observe(version, latency_s=time.perf_counter() - began, error=True, tokens=0)
        raise
    if routed:
        server.rollouts.observe(
            version, latency_s=time.perf_counter() - began, error=False, tokens=answer.tokens
        )
    return answer.body, answer.tokens


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
            if routed:
                server.rollouts.observe(version, latency_s=time.perf_counter() - began, error=False, tokens=0)

    headers = {"x-model-version": version, "cache-control": "no-cache"}
    return StreamingResponse(relay(), media_type="text/event-stream", headers=headers)


async def _solve_once(server: Server, req: SolveRequest, version: str, routed: bool) -> Any:
    began = time.perf_counter()
    try:
        out = await server.solver.solve(version, req)
    except APIError as exc:
        if routed and exc.status == 429:
            server.rollouts.observe(version, latency_s=time.perf_counter() - began, error=True, tokens=0)
        raise
    if routed:
        server.rollouts.observe(
            version, latency_s=time.perf_counter() - began, error=False, tokens=out.tokens
        )
        if out.passed is not None:
            passed = out.passed
            server.spawn(_grade(server, version, passed))
    return out


async def _grade(server: Server, version: str, passed: bool) -> None:
    server.rollouts.observe_grade(version, passed)


async def _shadow_solve(server: Server, req: SolveRequest, version: str) -> None:
    try:
        await _solve_once(server, req, version, True)
    except APIError as exc:
        log.info("shadow_failed", version=version, status=exc.status, code=exc.code)
