"""Keys and limits against real servers: 401/403 by key, loopback-only without keys, 413/429 limits."""

from __future__ import annotations

import concurrent.futures
import logging

import httpx
import pytest
from starlette.requests import Request

from coding_framework.serving.auth import Auth
from coding_framework.serving.errors import APIError
from tests.serving.conftest import ADMIN_KEY, API_KEY, assert_openai_error, chat_body


def _auth(key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"} if key else {}


@pytest.mark.parametrize(("key", "status"), [(None, 401), ("wrong", 401), (API_KEY, 200), (ADMIN_KEY, 200)])
def test_inference_needs_the_api_key(keyed_server, key: str | None, status: int) -> None:
    response = httpx.post(f"{keyed_server.url}/v1/chat/completions", json=chat_body(), headers=_auth(key),
                          timeout=60)
    assert response.status_code == status, response.text
    if status == 401:
        assert_openai_error(response, 401)
        assert httpx.get(f"{keyed_server.url}/v1/models", headers=_auth(key)).status_code == 401


@pytest.mark.parametrize(("key", "status"), [(None, 401), ("wrong", 401), (API_KEY, 403), (ADMIN_KEY, 404)])
def test_admin_endpoints_need_the_admin_key(keyed_server, key: str | None, status: int) -> None:
    response = httpx.get(f"{keyed_server.url}/v1/rollouts/unknown-id", headers=_auth(key))
    assert_openai_error(response, status)
    post = httpx.post(f"{keyed_server.url}/v1/rollouts", json={"strategy": "canary"}, headers=_auth(key))
    assert post.status_code == (400 if key == ADMIN_KEY else status)


def test_health_needs_no_key(keyed_server) -> None:
    assert httpx.get(f"{keyed_server.url}/health").status_code == 200


def _request(host: str, token: str | None = None) -> Request:
    headers = [(b"authorization", f"Bearer {token}".encode())] if token else []
    return Request({"type": "http", "client": (host, 5555), "headers": headers, "method": "GET", "path": "/"})


def test_without_keys_only_loopback_clients_are_served() -> None:
    auth = Auth(None, None)
    assert auth.inference(_request("127.0.0.1")) and auth.admin(_request("::1"))
    for call in (auth.inference, auth.admin):
        with pytest.raises(APIError) as err:
            call(_request("10.1.2.3"))
        assert err.value.status == 403


def test_without_an_admin_key_admin_is_loopback_only_even_with_the_api_key() -> None:
    auth = Auth("k", None)
    with pytest.raises(APIError) as err:
        auth.admin(_request("10.1.2.3", "k"))
    assert err.value.status == 403
    assert auth.admin(_request("127.0.0.1", "k"))
    assert auth.inference(_request("10.1.2.3", "k"))


def test_keys_never_reach_the_logs(keyed_server, caplog, capfd) -> None:
    caplog.set_level(logging.DEBUG)
    for key in (API_KEY, ADMIN_KEY, "wrong"):
        url = f"{keyed_server.url}/v1/chat/completions"
        httpx.post(url, json=chat_body(), headers=_auth(key), timeout=60)
        httpx.post(f"{keyed_server.url}/v1/rollouts", json={"candidate": "/nope"}, headers=_auth(key))
    out, err = capfd.readouterr()
    for key in (API_KEY, ADMIN_KEY):
        assert key not in caplog.text and key not in out and key not in err


def test_body_limit_follows_the_config(tight_server) -> None:
    response = httpx.post(f"{tight_server.url}/v1/solve", json={"prompt": "x" * 5000})
    assert_openai_error(response, 413)


def test_queue_overflow_is_429_with_retry_after_never_5xx(tight_server) -> None:
    body = chat_body(max_tokens=200)

    def send(_: int) -> httpx.Response:
        return httpx.post(f"{tight_server.url}/v1/chat/completions", json=body, timeout=120)

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        responses = list(pool.map(send, range(6)))
    codes = [r.status_code for r in responses]
    assert 200 in codes and 429 in codes and max(codes) < 500, codes
    rejected = next(r for r in responses if r.status_code == 429)
    assert rejected.headers["retry-after"].isdigit()
    assert assert_openai_error(rejected, 429)["code"] in ("queue_full", "rate_limit_exceeded")


def test_rate_limit_is_429_with_retry_after(tight_server) -> None:
    codes = []
    for _ in range(12):
        response = httpx.post(f"{tight_server.url}/v1/chat/completions", json=chat_body(max_tokens=1),
                              timeout=60)
        codes.append(response.status_code)
        if response.status_code == 429:
            assert response.headers["retry-after"].isdigit()
            assert assert_openai_error(response, 429)["code"] == "rate_limit_exceeded"
            return
    raise AssertionError(f"no 429 after 12 requests over a burst of 8: {codes}")
