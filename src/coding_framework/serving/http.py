"""Request bodies in and JSON responses out, as every handler reads and writes them."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from coding_framework.serving.errors import APIError, bad_request

__all__ = ["JSON", "json_response", "read_json"]

JSON = "application/json"


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


def json_response(data: Any, version: str | None = None, status: int = 200) -> Response:
    headers = {"x-model-version": version} if version else None
    return Response(orjson.dumps(data), status_code=status, media_type=JSON, headers=headers)
