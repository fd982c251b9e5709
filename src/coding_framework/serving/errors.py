"""Client-facing errors: every failure a client can cause is a 4xx with OpenAI's JSON error body."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response


class APIError(Exception):
    """A non-success answer: ``status`` with ``{"error": {message, type, param, code}}``."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.type, self.param, self.code = status, message, type, param, code
        self.retry_after = retry_after

    def response(self) -> Response:
        return error_response(self.status, self.message, self.type, self.param, self.code, self.retry_after)


class ReplicaError(Exception):
    """A replica failed to answer (died, 5xx, timed out): the pool ejects it and retries on another one."""


def error_body(message: str, type_: str, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def error_response(
    status: int,
    message: str,
    type_: str = "invalid_request_error",
    param: str | None = None,
    code: str | None = None,
    retry_after: int | None = None,
) -> Response:
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
    return Response(
        orjson.dumps(error_body(message, type_, param, code)),
        status_code=status,
        media_type="application/json",
        headers=headers,
    )


def bad_request(message: str, param: str | None = None, code: str | None = None) -> APIError:
    return APIError(400, message, param=param, code=code)


def too_many(message: str, retry_after: int, code: str = "rate_limit_exceeded") -> APIError:
    return APIError(429, message, type="rate_limit_error", code=code, retry_after=retry_after)
