"""Who may call what. Inference endpoints take the API key, admin endpoints (rollouts, deploys) the admin key.

- ``api_key`` set: inference needs ``Authorization: Bearer <api_key>`` (the admin key works too); missing or
  wrong: 401. Unset: inference answers loopback clients only (others: 403), without a key.
- ``admin_key`` set: admin endpoints need it; the inference key gets 403, anything else 401. Unset: admin
  endpoints answer loopback clients only (403 otherwise), which must still hold the API key if one is set.

Keys are compared in constant time and never logged; a key's rate-limit bucket is named by its hash.
"""

from __future__ import annotations

import hashlib
import hmac

from starlette.requests import Request

from coding_framework.serving.errors import APIError

_LOOPBACK = ("127.", "::1", "localhost")


def is_loopback(request: Request) -> bool:
    host = request.client.host if request.client else ""
    return host.startswith(_LOOPBACK) or host == "testclient"


def bearer(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _same(given: str | None, key: str | None) -> bool:
    return given is not None and key is not None and hmac.compare_digest(given.encode(), key.encode())


def _unauthorized(message: str) -> APIError:
    return APIError(401, message, type="authentication_error", code="invalid_api_key")


def _forbidden(message: str) -> APIError:
    return APIError(403, message, type="permission_error", code="forbidden")


class Auth:
    def __init__(self, api_key: str | None, admin_key: str | None) -> None:
        self.api_key, self.admin_key = api_key or None, admin_key or None

    def inference(self, request: Request) -> str:
        """The caller's rate-limit key, or the 401/403."""
        token = bearer(request)
        if self.api_key is None:
            if not is_loopback(request):
                raise _forbidden("this server has no API key and answers loopback clients only")
            return _client_key(request)
        if _same(token, self.api_key) or _same(token, self.admin_key):
            return _key_name(token)
        raise _unauthorized("missing or invalid API key: send Authorization: Bearer <key>")

    def admin(self, request: Request) -> str:
        token = bearer(request)
        if self.admin_key is None:
            if not is_loopback(request):
                raise _forbidden("without --admin-key, admin endpoints answer loopback clients only")
            return self.inference(request)
        if _same(token, self.admin_key):
            return _key_name(token)
        if _same(token, self.api_key):
            raise _forbidden("the inference key cannot manage rollouts; use the admin key")
        raise _unauthorized("missing or invalid admin key: send Authorization: Bearer <admin key>")


def _key_name(token: str | None) -> str:
    return "key:" + hashlib.sha256((token or "").encode()).hexdigest()[:16]


def _client_key(request: Request) -> str:
    return "addr:" + (request.client.host if request.client else "?")
