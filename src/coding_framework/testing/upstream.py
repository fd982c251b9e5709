"""A real OpenAI-compatible upstream for serving tests and benchmarks: a raw ASGI app under uvicorn that
answers every chat completion with fixed ``content`` (or fails with ``status``), streaming included, and
counts what it served. Fast on purpose: the router-overhead benchmark measures the router, not this."""

from __future__ import annotations

import threading
import time
from typing import Any

import orjson
import uvicorn

from coding_framework.llm.vllm_server import free_port


class MockUpstream:
    """``with MockUpstream("def add(a, b):\\n    return a + b\\n") as up: up.spec`` is a servable spec."""

    def __init__(self, content: str = "ok", *, status: int = 200, model: str = "mock", port: int = 0) -> None:
        self.content, self.status, self.model = content, status, model
        self.requests = 0
        self.port = port or free_port()
        config = uvicorn.Config(self, host="127.0.0.1", port=self.port, log_level="warning", access_log=False,
                                loop="uvloop", http="httptools")
        self.server = uvicorn.Server(config)
        self.server.config.install_signal_handlers = False  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def spec(self) -> str:
        return f"{self.url}@{self.model}"

    def answer(self, stream: bool) -> list[bytes]:
        head = {"id": "chatcmpl-mock", "created": 0, "model": self.model}
        if not stream:
            body = {**head, "object": "chat.completion", "choices": [
                {"index": 0, "message": {"role": "assistant", "content": self.content},
                 "finish_reason": "stop", "logprobs": None}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8}}
            return [orjson.dumps(body)]
        chunks = [{"role": "assistant", "content": ""}, {"content": self.content}, {}]
        out = [b"data: " + orjson.dumps({**head, "object": "chat.completion.chunk", "choices": [
            {"index": 0, "delta": d, "finish_reason": None if d else "stop"}]}) + b"\n\n" for d in chunks]
        return [*out, b"data: [DONE]\n\n"]

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        if scope["path"].endswith("/health"):
            await _send(send, 200 if self.status < 500 else 503, [b"{}"], b"application/json")
            return
        if scope["path"].endswith("/models"):
            data = {"object": "list", "data": [{"id": self.model, "object": "model"}]}
            await _send(send, 200, [orjson.dumps(data)], b"application/json")
            return
        self.requests += 1
        if self.status != 200:
            await _send(send, self.status, [b'{"error": {"message": "mock failure"}}'], b"application/json")
            return
        stream = bool(orjson.loads(body or b"{}").get("stream"))
        kind = b"text/event-stream" if stream else b"application/json"
        await _send(send, 200, self.answer(stream), kind)

    def __enter__(self) -> MockUpstream:
        self._thread.start()
        while not self.server.started:
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=10)


async def _send(send: Any, status: int, parts: list[bytes], kind: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", kind)]})
    for i, part in enumerate(parts):
        await send({"type": "http.response.body", "body": part, "more_body": i < len(parts) - 1})


if __name__ == "__main__":  # `python -m coding_framework.testing.upstream PORT`: serve until killed
    import sys

    with MockUpstream("def add(a, b):\n    return a + b\n", port=int(sys.argv[1])) as upstream:
        upstream._thread.join()
