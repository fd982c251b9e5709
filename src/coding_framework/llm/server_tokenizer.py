"""The served model's tokenizer reached through vLLM's ``/tokenize`` and ``/detokenize`` endpoints.

A stand-in for a local Hugging Face tokenizer when only the server has the model: it implements the part
of the tokenizer API the engines and ``TokenSession`` use, one HTTP round trip per call. A local
tokenizer directory (``tokenizer_path``) is faster and should be preferred.
"""

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from typing import Any, Protocol, TypeVar

from coding_framework.llm.base import EngineError

T = TypeVar("T")


class ServerClient(Protocol):
    """What the tokenizer needs of its engine (``OpenAICompatibleEngine``): the served model's name, a
    request on the engine's loop, and a way to wait for one from sync code."""

    model: str

    def _run(self, coro: Coroutine[Any, Any, T]) -> T: ...

    async def _request(self, method: str, path: str, body: dict[str, Any] | None = None,
                       *, root: bool = False) -> Any: ...


class ServerTokenizer:
    """Tokenizes with the server's tokenizer and chat template (vLLM's extra endpoints).

    ``decode`` keeps special tokens (``/detokenize`` has no option to skip them), so
    ``apply_chat_template(..., tokenize=False)`` renders the template exactly for byte-level tokenizers.
    """

    def __init__(self, engine: ServerClient) -> None:
        self._engine = engine

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        body = {"model": self._engine.model, "prompt": text, "add_special_tokens": add_special_tokens}
        return self._tokens(self._engine._run(self._post("/tokenize", body)))

    def __call__(self, text: str, add_special_tokens: bool = True) -> dict[str, list[int]]:
        return {"input_ids": self.encode(text, add_special_tokens=add_special_tokens)}

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        if skip_special_tokens:
            raise EngineError(
                "the server's /detokenize cannot skip special tokens; pass tokenizer_path to "
                "OpenAICompatibleEngine to decode locally"
            )
        return self._engine._run(self.adecode(ids))

    async def adecode(self, ids: Sequence[int]) -> str:
        body = await self._post("/detokenize", {"model": self._engine.model, "tokens": list(ids)})
        return str(body.get("prompt", ""))

    def convert_ids_to_tokens(self, ids: int | Sequence[int]) -> str | list[str]:
        """Each id decoded alone: the token's text, which for special tokens is the token itself."""
        if isinstance(ids, int):
            return self.decode([ids])
        return [self.decode([i]) for i in ids]

    def apply_chat_template(
        self,
        messages: Sequence[dict[str, str]],
        tokenize: bool = True,
        add_generation_prompt: bool = False,
        return_dict: bool = True,
        **_: Any,
    ) -> dict[str, list[int]] | list[int] | str:
        """Like transformers 5: ``tokenize=True`` gives ``{"input_ids": ids}`` (the bare list with
        ``return_dict=False``), ``tokenize=False`` the rendered text."""
        body = {
            "model": self._engine.model,
            "messages": [dict(m) for m in messages],
            "add_generation_prompt": add_generation_prompt,
        }
        ids = self._tokens(self._engine._run(self._post("/tokenize", body)))
        if not tokenize:
            return self.decode(ids)
        return {"input_ids": ids} if return_dict else ids

    @property
    def chat_template(self) -> str | None:
        """The served template when the server exposes ``/tokenizer_info``
        (``--enable-tokenizer-info-endpoint``), else None."""
        try:
            info = self._engine._run(self._engine._request("GET", "/tokenizer_info", root=True))
        except EngineError:
            return None
        return info.get("chat_template") if isinstance(info, dict) else None

    async def _post(self, path: str, body: dict[str, Any]) -> Any:
        try:
            return await self._engine._request("POST", path, body, root=True)
        except EngineError as exc:
            if "has no POST" in str(exc):
                raise EngineError(
                    f"{exc}. The server offers no tokenizer endpoints: pass tokenizer_path (the "
                    "served model's directory) to OpenAICompatibleEngine"
                ) from exc
            raise

    @staticmethod
    def _tokens(body: Any) -> list[int]:
        tokens = body.get("tokens") if isinstance(body, dict) else None
        if not isinstance(tokens, list):
            raise EngineError(f"/tokenize returned no tokens: {str(body)[:200]}")
        return [int(t) for t in tokens]
