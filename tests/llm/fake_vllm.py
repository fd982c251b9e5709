"""A small HTTP server answering like vLLM 0.32's OpenAI endpoints, for the OpenAICompatibleEngine tests.

Responses copy the shape of recorded vLLM answers (``return_token_ids`` -> ``choices[0].token_ids``,
``logprobs: 0`` -> ``choices[0].logprobs.token_logprobs``, vLLM's error bodies). The "model" emits a
fixed script of token ids, then EOS, and honours ``max_tokens`` and stop strings the way vLLM does (the
text is cut right after the stop string, the ids are not). Knobs make it fail in the ways a real server
can: 503s, slowness, an old vLLM without token ids, no tokenizer endpoints.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

EOS = 2
VOCAB = {
    0: "<|endoftext|>",
    1: "<|im_start|>",
    2: "<|im_end|>",
    3: "def",
    4: " add",
    5: "(a, b",
    6: "):",
    7: "\n",
    8: "    return",
    9: " a",
    10: " +",
    11: " b",
    12: "user",
    13: "assistant",
    14: "hi",
}
SPECIAL = {0, 1, 2}
SCRIPT = [3, 4, 5, 6, 7, 8, 9, 10, 11, EOS]  # "def add(a, b):\n    return a + b" then EOS


class FakeTokenizer:
    """Decodes ``VOCAB`` ids the way a Hugging Face tokenizer would."""

    eos_token_id = EOS

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        return "".join(VOCAB[i] for i in ids if not (skip_special_tokens and i in SPECIAL))


def _encode(text: str) -> list[int]:
    """Greedy longest match over ``VOCAB`` (enough for the texts the tests use)."""
    by_len = sorted(VOCAB.items(), key=lambda kv: -len(kv[1]))
    ids, i = [], 0
    while i < len(text):
        tid, tok = next((t, s) for t, s in by_len if text.startswith(s, i))
        ids.append(tid)
        i += len(tok)
    return ids


@dataclass
class FakeVLLM:
    """Knobs and a record of what the server received; change knobs between requests."""

    models: list[str] = field(default_factory=lambda: ["tiny"])
    script: list[int] = field(default_factory=lambda: list(SCRIPT))
    fail_next: int = 0
    delay_s: float = 0.0
    max_model_len: int | None = None  # a completion prompt longer than this gets vLLM's 400
    token_ids: bool = True
    tokenizer_endpoints: bool = True
    requests: list[tuple[str, dict[str, Any], dict[str, str]]] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def generate(self, body: dict[str, Any]) -> tuple[list[int], str, str, str | None]:
        """(ids, text, finish_reason, stop_reason) of one completion."""
        ids: list[int] = []
        text, stops = "", body.get("stop") or []
        for tid in self.script[: body.get("max_tokens", 16)]:
            ids.append(tid)
            if tid == EOS:
                return ids, text, "stop", None
            text += VOCAB[tid]
            for s in stops:
                if s in text:
                    return ids, text[: text.index(s) + len(s)], "stop", s
        return ids, text, "length", None


def _completion(fake: FakeVLLM, body: dict[str, Any]) -> dict[str, Any]:
    ids, text, finish, stop = fake.generate(body)
    lps = [-0.25 * (k + 1) for k in range(len(ids))]
    choice: dict[str, Any] = {
        "index": 0,
        "text": text,
        "finish_reason": finish,
        "stop_reason": stop,
        "prompt_logprobs": None,
        "logprobs": {
            "text_offset": list(range(len(ids))),
            "token_logprobs": lps,
            "tokens": [VOCAB[i] for i in ids],
            "top_logprobs": [{VOCAB[i]: lp} for i, lp in zip(ids, lps, strict=True)],
        },
    }
    if fake.token_ids:
        choice |= {"token_ids": ids, "prompt_token_ids": body["prompt"]}
    return {
        "id": "cmpl-fake",
        "object": "text_completion",
        "created": 0,
        "model": body["model"],
        "choices": [choice],
        "usage": {"prompt_tokens": len(body["prompt"]), "completion_tokens": len(ids)},
    }


def _chat(fake: FakeVLLM, body: dict[str, Any]) -> dict[str, Any]:
    ids, text, finish, stop = fake.generate(body)
    content = [
        {"token": VOCAB[i], "logprob": -0.5, "bytes": list(VOCAB[i].encode()), "top_logprobs": []}
        for i in ids
    ]
    choice: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": text},
        "logprobs": {"content": content},
        "finish_reason": finish,
        "stop_reason": stop,
    }
    if fake.token_ids:
        choice["token_ids"] = ids
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": body["model"],
        "choices": [choice],
        "prompt_token_ids": _render(body["messages"], True) if fake.token_ids else None,
    }


def _render(messages: list[dict[str, str]], add_generation_prompt: bool) -> list[int]:
    ids: list[int] = []
    for m in messages:
        ids += [1, *_encode(m["role"]), 7, *_encode(m["content"]), EOS, 7]
    return ids + ([1, 13, 7] if add_generation_prompt else [])


def _not_found(message: str) -> tuple[int, dict[str, Any]]:
    return 404, {"error": {"message": message, "type": "NotFoundError", "param": None, "code": 404}}


def _route(fake: FakeVLLM, method: str, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    if path == "/health":
        return 200, None
    if path == "/v1/models":
        return 200, {
            "object": "list",
            "data": [{"id": m, "object": "model", "owned_by": "vllm"} for m in fake.models],
        }
    if "model" in body and body["model"] not in fake.models:
        return _not_found(
            f"The model `{body['model']}` does not exist. Valid aliases: {', '.join(fake.models)}."
        )
    if fake.fail_next > 0:
        fake.fail_next -= 1
        return 503, {
            "error": {"message": "engine overloaded", "type": "ServiceUnavailableError", "code": 503}
        }
    if path == "/v1/completions":
        if fake.max_model_len is not None and len(body.get("prompt") or []) > fake.max_model_len:
            return 400, {"error": {
                "message": f"This model's maximum context length is {fake.max_model_len} tokens. However, "
                f"your request has {len(body['prompt'])} input tokens.",
                "type": "BadRequestError", "code": 400,
            }}  # fmt: skip
        return 200, _completion(fake, body)
    if path == "/v1/chat/completions":
        return 200, _chat(fake, body)
    if path == "/tokenize" and fake.tokenizer_endpoints:
        ids = (
            _render(body["messages"], body.get("add_generation_prompt", True))
            if "messages" in body
            else _encode(body["prompt"])
        )
        return 200, {"count": len(ids), "max_model_len": 1024, "tokens": ids, "token_strs": None}
    if path == "/detokenize" and fake.tokenizer_endpoints:
        return 200, {"prompt": FakeTokenizer().decode(body["tokens"])}
    return _not_found("Not Found")


def _handler(fake: FakeVLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _serve(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else {}
            with fake.lock:
                fake.requests.append((self.path, body, dict(self.headers)))
                fake.in_flight += 1
                fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
            try:
                time.sleep(fake.delay_s)
                with fake.lock:
                    status, payload = _route(fake, method, self.path, body)
            finally:
                with fake.lock:
                    fake.in_flight -= 1
            data = b"" if payload is None else json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (the timeout test): nothing to answer

        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

    return Handler


class FakeVLLMServer:
    """``with FakeVLLMServer() as (url, fake):`` serves on a free loopback port until the block ends."""

    def __init__(self, fake: FakeVLLM | None = None) -> None:
        self.fake = fake or FakeVLLM()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self.fake))
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> tuple[str, FakeVLLM]:
        threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self.url, self.fake

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
