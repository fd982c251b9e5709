"""A TokenEngine over an OpenAI-compatible HTTP server (vLLM): token ids in, ids + logprobs out.

``generate`` posts the prompt as a list of token ids to ``/v1/completions`` with vLLM's
``return_token_ids`` (so the response carries ``choices[0].token_ids``, the exact generated ids, EOS
included) and ``logprobs: 0`` (``choices[0].logprobs.token_logprobs``, the sampled tokens' logprobs).
vLLM returns logprobs of the raw model distribution by default (``--logprobs-mode raw_logprobs``), the
same quantity ``LocalEngine`` reports; start vLLM with ``--logprobs-mode processed_logprobs`` for those of
the tempered, top-p filtered distribution the tokens were drawn from.

Text. ``Generation.text`` is what vLLM detokenized (special tokens skipped). After a stop string, vLLM
cuts the text inside the last token; tokens cannot be cut, so the text is decoded again from the ids and
keeps the stop string and the rest of its token, as ``LocalEngine`` does.

All requests run on one ``httpx.AsyncClient`` on a private event-loop thread: the sync methods wait for
it, ``agenerate`` awaits it from any loop, and ``generate_batch`` sends its requests concurrently.
"""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Coroutine, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Self, TypeVar, cast

import httpx

from coding_framework.llm.base import (
    BatchRequestsFailed,
    EngineError,
    FinishReason,
    Generation,
    RequestFailed,
    SamplingParams,
)
from coding_framework.llm.server_tokenizer import ServerTokenizer
from coding_framework.logs import get_logger

log = get_logger(__name__)

T = TypeVar("T")
Message = dict[str, str]

_RETRY_STATUS = frozenset({500, 502, 503, 504})
# what the server says about one request alone, e.g. vLLM's 400 for a prompt longer than its context
_ONE_REQUEST_STATUS = frozenset({400, 413, 422})
_SEED_SPACE = 2**62
# vLLM added `return_token_ids` to its OpenAI endpoints in 0.10.2; older servers ignore the field.
_NO_TOKEN_IDS = (
    "the server at {url} returned no token ids: token-in/token-out needs vLLM >= 0.10.2 (the request field "
    "`return_token_ids`); other OpenAI-compatible servers do not return generated ids"
)


def row_seeds(seed: int | None, n: int) -> list[int | None]:
    """Per-request seeds of a batch: distinct, so equal prompts in one batch still draw different samples."""
    if seed is None:
        return [None] * n
    rng = random.Random(seed)
    seeds: list[int | None] = [seed, *(rng.randrange(_SEED_SPACE) for _ in range(n - 1))]
    return seeds[:n]


def split_base_url(base_url: str) -> tuple[str, str]:
    """``(server root, API root)``: vLLM serves ``/v1/...`` under the API root and ``/health``,
    ``/tokenize`` at the server root. ``base_url`` may be either."""
    url = base_url.rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise EngineError(f"base_url must start with http:// or https://, got {base_url!r}")
    if url.endswith("/v1"):
        return url[: -len("/v1")], url
    return url, f"{url}/v1"


def completion_body(
    model: str, prompt_ids: Sequence[int], params: SamplingParams, seed: int | None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "prompt": list(prompt_ids),
        "max_tokens": params.max_new_tokens,
        "temperature": params.temperature,
        "top_p": params.top_p,
        "logprobs": 0,
        "return_token_ids": True,
        "include_stop_str_in_output": True,
        "skip_special_tokens": True,
    }
    if params.stop:
        body["stop"] = list(params.stop)
    if seed is not None:
        body["seed"] = seed
    return body


def chat_body(model: str, messages: Sequence[Message], params: SamplingParams) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "messages": [dict(m) for m in messages],
        "max_tokens": params.max_new_tokens,
        "temperature": params.temperature,
        "top_p": params.top_p,
        "logprobs": True,
        "return_token_ids": True,
        "include_stop_str_in_output": True,
    }
    if params.stop:
        body["stop"] = list(params.stop)
    if params.seed is not None:
        body["seed"] = params.seed
    return body


def map_stop_reason(finish_reason: str | None, stop_reason: str | int | None) -> FinishReason:
    """vLLM's ``finish_reason``/``stop_reason`` pair as a ``FinishReason``.

    ``stop`` with no ``stop_reason`` is the EOS token; an int ``stop_reason`` is a stop token id (e.g. a
    second EOS id from generation_config), also an end of sequence; a str is the matched stop string.
    """
    if finish_reason == "length":
        return "length"
    if finish_reason == "stop":
        return "stop" if isinstance(stop_reason, str) else "eos"
    raise EngineError(f"generation ended with finish_reason={finish_reason!r} (stop_reason={stop_reason!r})")


def _first_choice(body: Any, url: str) -> dict[str, Any]:
    choices = body.get("choices") if isinstance(body, dict) else None
    if not choices or not isinstance(choices[0], dict):
        raise EngineError(f"the server at {url} returned no choices: {str(body)[:300]}")
    return choices[0]


def _checked_tokens(ids: Any, logprobs: Any, url: str) -> tuple[list[int], list[float]]:
    if ids is None:
        raise EngineError(_NO_TOKEN_IDS.format(url=url))
    if logprobs is None or len(logprobs) != len(ids) or any(lp is None for lp in logprobs):
        raise EngineError(
            f"the server at {url} returned {len(ids)} token ids but logprobs {str(logprobs)[:120]}; "
            "is it started with --max-logprobs 0 or a --logprobs-mode that returns logits?"
        )
    return [int(t) for t in ids], [float(lp) for lp in logprobs]


def parse_completion(body: Any, url: str, policy_version: str) -> Generation:
    """A ``/v1/completions`` response (one choice, ``return_token_ids`` and ``logprobs`` set)."""
    choice = _first_choice(body, url)
    ids, lps = _checked_tokens(
        choice.get("token_ids"), (choice.get("logprobs") or {}).get("token_logprobs"), url
    )
    reason = map_stop_reason(choice.get("finish_reason"), choice.get("stop_reason"))
    return Generation(
        token_ids=ids,
        logprobs=lps,
        text=choice.get("text") or "",
        stop_reason=reason,
        policy_version=policy_version,
        extra={
            "finish_reason": choice.get("finish_reason"),
            "server_stop_reason": choice.get("stop_reason"),
            "request_id": body.get("id"),
        },
    )


def parse_chat(body: Any, url: str, policy_version: str) -> Generation:
    """A ``/v1/chat/completions`` response. Without token ids (not vLLM) ids and logprobs are empty."""
    choice = _first_choice(body, url)
    text = (choice.get("message") or {}).get("content") or ""
    ids: list[int] = []
    lps: list[float] = []
    if choice.get("token_ids") is not None:
        content = (choice.get("logprobs") or {}).get("content")
        ids, lps = _checked_tokens(
            choice["token_ids"], None if content is None else [c.get("logprob") for c in content], url
        )
    reason = map_stop_reason(choice.get("finish_reason"), choice.get("stop_reason"))
    return Generation(
        token_ids=ids,
        logprobs=lps,
        text=text,
        stop_reason=reason,
        policy_version=policy_version,
        extra={"prompt_token_ids": body.get("prompt_token_ids"), "request_id": body.get("id")},
    )


def _error_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300] or response.reason_phrase
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if body.get("detail"):
            return str(body["detail"])
        if isinstance(err, str):
            return err
    return str(body)[:300]


class OpenAICompatibleEngine:
    """Token-exact generation from a vLLM server (any OpenAI-compatible one for ``chat``).

    ``base_url`` is the server root or its ``/v1`` API root. ``tokenizer`` is a loaded Hugging Face
    tokenizer; else ``tokenizer_path`` (the served model's tokenizer directory) is loaded; else the
    server's ``/tokenize`` and ``/detokenize`` endpoints stand in (``ServerTokenizer``).
    ``max_retries`` retries connection errors and 5xx answers, waiting ``backoff_s * 2**attempt``; a
    request that gets no answer within ``timeout_s`` fails at once (a retry would only wait again).
    ``policy_version`` is the served model name, plus ``@version_tag`` when one is set.
    ``role_models`` maps a call's role (``SamplingParams.role``) to the model name its requests ask for,
    e.g. a LoRA adapter the server serves under its own name (vLLM ``--lora-modules``); other roles ask
    for ``model``.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        tokenizer: Any = None,
        *,
        tokenizer_path: str | Path | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        max_concurrency: int = 16,
        version_tag: str | None = None,
        role_models: Mapping[str, str] | None = None,
    ) -> None:
        if tokenizer is not None and tokenizer_path is not None:
            raise ValueError("pass tokenizer or tokenizer_path, not both")
        if timeout_s <= 0 or max_retries < 0 or backoff_s < 0 or max_concurrency < 1:
            raise ValueError("timeout_s must be > 0, max_retries and backoff_s >= 0, max_concurrency >= 1")
        self.server_url, self.api_url = split_base_url(base_url)
        self.model = model
        self.role_models = dict(role_models or {})
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_concurrency = max_concurrency
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._version_tag = version_tag
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._client: httpx.AsyncClient | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._start_lock = threading.Lock()
        if tokenizer is None and tokenizer_path is not None:
            tokenizer = _load_tokenizer(tokenizer_path)
        self.tokenizer = tokenizer if tokenizer is not None else ServerTokenizer(self)
        # A server this engine owns (started for it, e.g. by ``llm.factory``): ``close`` stops it too.
        self.launcher: Any = None

    @property
    def policy_version(self) -> str:
        return f"{self.model}@{self._version_tag}" if self._version_tag else self.model

    def model_for(self, role: str | None) -> str:
        """The served model name a call of ``role`` asks for."""
        return self.role_models.get(role, self.model) if role is not None else self.model

    def version_for(self, role: str | None) -> str:
        """The policy version a call of ``role`` records: the model it asks for, with the version tag."""
        model = self.model_for(role)
        return f"{model}@{self._version_tag}" if self._version_tag else model

    def set_policy_version(self, version_tag: str | None) -> None:
        """Tag the weights the server now serves (e.g. after a trainer pushed new ones)."""
        self._version_tag = version_tag

    # -- public API ------------------------------------------------------------------------------------

    def generate(self, prompt_ids: Sequence[int], params: SamplingParams) -> Generation:
        return self._run(self._agenerate(prompt_ids, params, params.seed))

    def generate_batch(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[Generation]:
        """One request per prompt, at most ``max_concurrency`` in flight; request ``i`` gets its own seed
        (the first one ``params.seed``), so equal prompts still draw independent samples. Requests that fail
        alone (``RequestFailed``) raise ``BatchRequestsFailed`` once every request has ended, carrying the
        answers of the rest."""
        return self._run(self._abatch(prompts, params))

    async def agenerate(self, prompt_ids: Sequence[int], params: SamplingParams) -> Generation:
        return await self._await(self._agenerate(prompt_ids, params, params.seed))

    def chat(self, messages: Sequence[Message], params: SamplingParams) -> Generation:
        """Plain chat through ``/v1/chat/completions``: the server applies its chat template.

        With vLLM the result carries the generated ids and logprobs and ``extra['prompt_token_ids']``;
        other servers give the text only (empty ``token_ids``).
        """
        return self._run(self._achat(messages, params))

    def served_models(self) -> list[str]:
        """The model names the server serves (``/v1/models``)."""
        return self._run(self._aserved_models())

    def health(self) -> bool:
        """Whether the server answers ``GET /health`` with 200 (no retries)."""
        return self._run(self._ahealth())

    def close(self) -> None:
        """Close the HTTP client and stop the event-loop thread (a later call starts them again), and stop
        the server the engine owns, if any."""
        with self._start_lock:
            loop, client = self._loop, self._client
            self._loop = self._client = self._semaphore = self._loop_thread = None
        if loop is not None:
            if client is not None:
                asyncio.run_coroutine_threadsafe(client.aclose(), loop).result(timeout=10)
            loop.call_soon_threadsafe(loop.stop)
        launcher, self.launcher = self.launcher, None
        if launcher is not None:
            launcher.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- requests (run on the engine's loop) -----------------------------------------------------------

    async def _agenerate(
        self, prompt_ids: Sequence[int], params: SamplingParams, seed: int | None
    ) -> Generation:
        if not prompt_ids:
            raise EngineError("empty prompt: at least one token id is needed")
        body = completion_body(self.model_for(params.role), prompt_ids, params, seed)
        gen = parse_completion(
            await self._request("POST", "/completions", body), self.server_url, self.version_for(params.role)
        )
        if gen.stop_reason == "stop":
            gen = Generation(
                token_ids=gen.token_ids,
                logprobs=gen.logprobs,
                text=await self._adecode(gen.token_ids),
                stop_reason=gen.stop_reason,
                policy_version=gen.policy_version,
                extra=gen.extra,
            )
        return gen

    async def _abatch(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[Generation]:
        seeds = row_seeds(params.seed, len(prompts))
        outcomes = await asyncio.gather(
            *(self._agenerate(p, params, s) for p, s in zip(prompts, seeds, strict=True)),
            return_exceptions=True,
        )
        for outcome in outcomes:  # anything but one request's own failure fails the batch
            if isinstance(outcome, BaseException) and not isinstance(outcome, RequestFailed):
                raise outcome
        if any(isinstance(o, RequestFailed) for o in outcomes):
            raise BatchRequestsFailed(cast(list[Generation | RequestFailed], outcomes))
        return cast(list[Generation], outcomes)

    async def _achat(self, messages: Sequence[Message], params: SamplingParams) -> Generation:
        if not messages:
            raise EngineError("chat needs at least one message")
        request = chat_body(self.model_for(params.role), messages, params)
        body = await self._request("POST", "/chat/completions", request)
        return parse_chat(body, self.server_url, self.policy_version)

    async def _aserved_models(self) -> list[str]:
        body = await self._request("GET", "/models")
        return [str(m.get("id")) for m in body.get("data", []) if isinstance(m, dict)]

    async def _ahealth(self) -> bool:
        try:
            response = await self._http().get(f"{self.server_url}/health")
        except httpx.HTTPError:
            return False
        return response.status_code == 200

    async def _adecode(self, ids: list[int]) -> str:
        if isinstance(self.tokenizer, ServerTokenizer):
            return await self.tokenizer.adecode(ids)
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    async def _request(
        self, method: str, path: str, body: dict[str, Any] | None = None, *, root: bool = False
    ) -> Any:
        """JSON request to the API root (or the server root) with retries; errors become ``EngineError``."""
        url = f"{self.server_url if root else self.api_url}{path}"
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            last = attempt == attempts - 1
            try:
                async with self._limit():
                    response = await self._http().request(method, url, json=body)
            except httpx.TimeoutException as exc:
                if not isinstance(exc, httpx.ConnectTimeout):
                    raise self._timed_out(method, path) from exc
                if last:
                    raise self._unreachable(exc, attempts) from exc
            except httpx.TransportError as exc:
                if last:
                    raise self._unreachable(exc, attempts) from exc
            else:
                if response.status_code < 400:
                    return response.json()
                if response.status_code not in _RETRY_STATUS or last:
                    raise await self._http_error(response, method, path, attempt + 1)
            log.warning("vllm_retry", url=url, attempt=attempt + 1, of=attempts)
            await asyncio.sleep(self.backoff_s * 2**attempt)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _timed_out(self, method: str, path: str) -> RequestFailed:
        return RequestFailed(
            f"vLLM at {self.server_url} did not answer {method} {path} within {self.timeout_s} s; "
            "raise timeout_s, ask for fewer tokens, or check the server's load"
        )

    def _unreachable(self, exc: Exception, attempts: int) -> EngineError:
        log_path = getattr(self.launcher, "log_path", None)
        return EngineError(
            f"could not reach vLLM at {self.server_url}: is the server running? "
            f"({type(exc).__name__} after {attempts} attempt(s): {exc})"
            + (f"; the server's output is in {log_path}" if log_path else "")
        )

    async def _http_error(
        self, response: httpx.Response, method: str, path: str, attempts: int
    ) -> EngineError:
        status, message = response.status_code, _error_message(response)
        where = f"vLLM at {self.server_url}"
        if status == 404 and "model" in message.lower() and path != "/models":
            try:
                served = await self._aserved_models()
            except EngineError:
                served = []
            listing = ", ".join(repr(m) for m in served) if served else "(could not list them)"
            return EngineError(
                f"{where} does not serve model {self.model!r}; it serves {listing}: "
                "pass one of those as the model name"
            )
        if status == 404:
            return EngineError(
                f"{where} has no {method} {path} ({message}); is it an OpenAI-compatible server, "
                "and is base_url its root or its /v1 root?"
            )
        if status in (401, 403):
            return EngineError(
                f"{where} refused the request ({status}: {message}); check api_key / $OPENAI_API_KEY"
            )
        if status in _RETRY_STATUS:
            return EngineError(
                f"{where} failed {method} {path} with {status} after {attempts} attempts: {message}"
            )
        if status in _ONE_REQUEST_STATUS:
            return RequestFailed(f"{where} rejected {method} {path} ({status}): {message}")
        return EngineError(f"{where} rejected {method} {path} ({status}): {message}")

    # -- event loop plumbing ---------------------------------------------------------------------------

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._start_lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                self._loop_thread = threading.Thread(
                    target=loop.run_forever, name="openai-compat-engine", daemon=True
                )
                self._loop_thread.start()
                self._loop = loop
            return self._loop

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            limits = httpx.Limits(
                max_connections=self.max_concurrency, max_keepalive_connections=self.max_concurrency
            )
            self._client = httpx.AsyncClient(timeout=self.timeout_s, headers=self._headers, limits=limits)
        return self._client

    def _limit(self) -> asyncio.Semaphore:
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.max_concurrency)
        return self._semaphore

    def _submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self._ensure_loop())

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        if threading.current_thread() is self._loop_thread:
            coro.close()
            raise RuntimeError("a sync engine method was called on the engine's own loop; use the async one")
        return self._submit(coro).result()

    async def _await(self, coro: Coroutine[Any, Any, T]) -> T:
        return await asyncio.wrap_future(self._submit(coro))


def _load_tokenizer(path: str | Path) -> Any:
    from transformers import AutoTokenizer

    p = Path(path).expanduser()
    if not p.is_dir():
        raise EngineError(f"tokenizer directory {p} does not exist; pass the served model's directory")
    try:
        return AutoTokenizer.from_pretrained(p)
    except (OSError, ValueError) as exc:
        raise EngineError(f"cannot load a tokenizer from {p}: {exc}") from exc
