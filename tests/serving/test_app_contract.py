"""The HTTP contract of issue 13 against the real server (uvicorn, local engine, embedded model)."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.serving.conftest import assert_openai_error, chat_body

VERSION_ID = re.compile(r"^embedded@[0-9a-f]{12}$")


def test_health_and_models(client: httpx.Client) -> None:
    assert client.get("/health").status_code == 200
    models = client.get("/v1/models").json()
    assert models["object"] == "list"
    assert [m["id"] for m in models["data"]] and VERSION_ID.match(models["data"][0]["id"])
    assert models["data"][0]["object"] == "model"


@pytest.mark.parametrize("model", [None, "default", "champion", "embedded", "ID"])
def test_chat_routes_every_model_name_to_a_version(client: httpx.Client, model: str | None) -> None:
    version = client.get("/v1/models").json()["data"][0]["id"]
    extra = {} if model is None else {"model": version if model == "ID" else model}
    response = client.post("/v1/chat/completions", json=chat_body(**extra))
    assert response.status_code == 200, response.text
    assert response.headers["x-model-version"] == version
    body = response.json()
    assert body["object"] == "chat.completion" and body["model"] == version
    assert isinstance(body["choices"][0]["message"]["content"], str)
    assert body["choices"][0]["finish_reason"] in ("stop", "length")
    assert body["usage"]["completion_tokens"] >= 1


def test_chat_streams_openai_chunks(client: httpx.Client) -> None:
    with client.stream("POST", "/v1/chat/completions", json=chat_body(stream=True)) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert VERSION_ID.match(response.headers["x-model-version"])
        events = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [httpx.Response(200, content=e).json() for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-1]["choices"][0]["finish_reason"] in ("stop", "length")


BAD_CHAT = [
    ("not json", b"{not json", 400, None),
    ("a list", b"[1, 2]", 400, None),
    ("no messages", b'{"model": "default"}', 400, "messages"),
    ("empty messages", b'{"messages": []}', 400, "messages"),
    ("bad role", b'{"messages": [{"role": "wizard", "content": "x"}]}', 400, "messages"),
    ("content type", b'{"messages": [{"role": "user", "content": 5}]}', 400, "messages"),
    ("temperature type", b'{"messages": [{"role": "user", "content": "x"}], "temperature": "hot"}', 400,
     "temperature"),
    ("temperature range", b'{"messages": [{"role": "user", "content": "x"}], "temperature": 9}', 400,
     "temperature"),
    ("max_tokens zero", b'{"messages": [{"role": "user", "content": "x"}], "max_tokens": 0}', 400,
     "max_tokens"),
    ("max_tokens huge", b'{"messages": [{"role": "user", "content": "x"}], "max_tokens": 99999999}', 400,
     "max_tokens"),
    ("n", b'{"messages": [{"role": "user", "content": "x"}], "n": 3}', 400, "n"),
    ("stream type", b'{"messages": [{"role": "user", "content": "x"}], "stream": "yes"}', 400, "stream"),
    ("stop type", b'{"messages": [{"role": "user", "content": "x"}], "stop": 7}', 400, "stop"),
    ("unknown model", b'{"messages": [{"role": "user", "content": "x"}], "model": "gpt-9"}', 404, "model"),
]


@pytest.mark.parametrize(("name", "raw", "status", "param"), BAD_CHAT, ids=[b[0] for b in BAD_CHAT])
def test_bad_chat_requests_get_openai_errors(
    client: httpx.Client, name: str, raw: bytes, status: int, param: str | None
) -> None:
    response = client.post("/v1/chat/completions", content=raw, headers={"content-type": "application/json"})
    assert assert_openai_error(response, status)["param"] == param


def test_over_long_prompt_is_a_400(client: httpx.Client) -> None:
    response = client.post("/v1/chat/completions", json=chat_body("x" * 40_000))
    assert assert_openai_error(response, 400)["code"] == "context_length_exceeded"


def test_prompt_longer_than_the_model_is_a_400(client: httpx.Client) -> None:
    response = client.post("/v1/chat/completions", json=chat_body("def f(): pass\n" * 2000))
    assert assert_openai_error(response, 400)["code"] == "context_length_exceeded"


def test_oversized_body_is_a_413(client: httpx.Client) -> None:
    response = client.post("/v1/chat/completions", content=b"x" * (2 << 20))
    assert assert_openai_error(response, 413)["code"] == "request_too_large"


def test_rollouts_list(client: httpx.Client) -> None:
    listing = client.get("/v1/rollouts").json()
    assert listing["object"] == "list" and isinstance(listing["data"], list)


def test_unknown_routes_and_methods_are_openai_4xx(client: httpx.Client) -> None:
    assert_openai_error(client.get("/v1/nothing"), 404)
    assert_openai_error(client.get("/v1/chat/completions"), 405)
    assert_openai_error(client.get("/v1/rollouts/no-such-rollout"), 404)


def test_solve_with_tests_is_graded(client: httpx.Client) -> None:
    body = {"prompt": "Write a function add(a, b) that returns a + b.", "entry_point": "add",
            "tests": "assert add(1, 2) == 3\nassert add(0, 0) == 0\n", "session_id": "s1", "max_rounds": 1}
    response = client.post("/v1/solve", json=body)
    assert response.status_code == 200, response.text
    out = response.json()
    assert set(out) == {"code", "passed", "rounds", "model_version"}
    assert isinstance(out["passed"], bool) and out["rounds"] == 1 and isinstance(out["code"], str)
    assert out["model_version"] == response.headers["x-model-version"]


def test_solve_without_tests_has_no_verdict(client: httpx.Client) -> None:
    response = client.post("/v1/solve", json={"prompt": "Write a function that reverses a string.",
                                               "entry_point": None, "tests": None, "session_id": None,
                                               "max_rounds": None})
    assert response.status_code == 200, response.text
    assert response.json()["passed"] is None and response.json()["rounds"] >= 1


BAD_SOLVE = [
    ("no prompt", {"tests": "assert True"}, "prompt"),
    ("prompt type", {"prompt": 3}, "prompt"),
    ("entry point", {"prompt": "p", "entry_point": "not an identifier"}, "entry_point"),
    ("rounds range", {"prompt": "p", "max_rounds": 0}, "max_rounds"),
    ("rounds type", {"prompt": "p", "max_rounds": "two"}, "max_rounds"),
    ("no entry point to test", {"prompt": "no function here", "tests": "assert f() == 1"}, "entry_point"),
    ("unknown field", {"prompt": "p", "temperature": 1}, "temperature"),
]


@pytest.mark.parametrize(("name", "body", "param"), BAD_SOLVE, ids=[b[0] for b in BAD_SOLVE])
def test_bad_solve_requests_get_openai_errors(
    client: httpx.Client, name: str, body: dict[str, object], param: str
) -> None:
    assert assert_openai_error(client.post("/v1/solve", json=body), 400)["param"] == param


BAD_ROLLOUTS = [
    ({"strategy": "canary"}, "candidate"),
    ({"candidate": "embedded", "strategy": "yolo"}, "strategy"),
    ({"candidate": "embedded", "steps": "10,50"}, "steps"),
    ({"candidate": "/no/such/model/dir"}, "candidate"),
]


@pytest.mark.parametrize(("body", "param"), BAD_ROLLOUTS)
def test_bad_rollout_requests_are_400(client: httpx.Client, body: dict[str, object], param: str) -> None:
    assert assert_openai_error(client.post("/v1/rollouts", json=body), 400)["param"] == param
