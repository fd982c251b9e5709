"""A LangChain chat model over any TokenEngine, reporting the exact token ids and logprobs of each call."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, Field

from coding_framework.llm.base import Generation, SamplingParams

_ROLES: dict[type[BaseMessage], str] = {
    SystemMessage: "system",
    HumanMessage: "user",
    AIMessage: "assistant",
    ToolMessage: "tool",
}
_OVERRIDABLE = ("max_new_tokens", "temperature", "top_p", "seed")


def to_chat_dicts(messages: list[BaseMessage]) -> list[dict[str, str]]:
    """LangChain messages as chat-template dicts (``role``, ``content``)."""
    out = []
    for m in messages:
        role = m.role if isinstance(m, ChatMessage) else _ROLES.get(type(m))
        if role is None:
            raise TypeError(
                f"unsupported message type {type(m).__name__}; use system, human, ai, tool or chat"
            )
        out.append({"role": role, "content": _text(m.content)})
    return out


def _text(content: str | list[Any]) -> str:
    if isinstance(content, str):
        return content
    return "".join(p if isinstance(p, str) else str(p.get("text", "")) for p in content)


class EngineChatModel(BaseChatModel):
    """Renders messages with the engine tokenizer's chat template, generates, and returns an AIMessage.

    ``response_metadata`` carries ``prompt_token_ids``, ``response_token_ids``, ``logprobs``,
    ``stop_reason`` and ``policy_version``. Call-time keyword arguments ``max_new_tokens``,
    ``temperature``, ``top_p`` and ``seed`` override the defaults below; ``stop`` adds stop strings.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    engine: Any = Field(description="A TokenEngine.")
    max_new_tokens: int = 512
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    stop: list[str] = Field(default_factory=list)
    role: str | None = Field(
        None, description="The calling agent's role: an engine with per-role adapters uses its adapter."
    )

    @property
    def _llm_type(self) -> str:
        return "coding-framework-engine"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "engine": type(self.engine).__name__,
            "max_new_tokens": self.max_new_tokens,
            "temperature": self.temperature,
            "top_p": self.top_p,
        }

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        prompt_ids, params = self._prepare(messages, stop, kwargs)
        return self._result(prompt_ids, self.engine.generate(prompt_ids, params))

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        prompt_ids, params = self._prepare(messages, stop, kwargs)
        return self._result(prompt_ids, await self.engine.agenerate(prompt_ids, params))

    def _prepare(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> tuple[list[int], SamplingParams]:
        unknown = set(kwargs) - set(_OVERRIDABLE)
        if unknown:
            raise TypeError(f"unknown generation arguments {sorted(unknown)}; allowed: {list(_OVERRIDABLE)}")
        tok = self.engine.tokenizer
        text = tok.apply_chat_template(to_chat_dicts(messages), tokenize=False, add_generation_prompt=True)
        prompt_ids = list(tok(text, add_special_tokens=False)["input_ids"])
        values = {k: getattr(self, k) for k in _OVERRIDABLE} | kwargs
        params = SamplingParams(stop=tuple(self.stop) + tuple(stop or ()), role=self.role, **values)
        return prompt_ids, params

    @staticmethod
    def _result(prompt_ids: list[int], gen: Generation) -> ChatResult:
        metadata = {
            "prompt_token_ids": prompt_ids,
            "response_token_ids": list(gen.token_ids),
            "logprobs": list(gen.logprobs),
            "stop_reason": gen.stop_reason,
            "policy_version": gen.policy_version,
        }
        message = AIMessage(content=gen.text, response_metadata=metadata)
        return ChatResult(
            generations=[ChatGeneration(message=message, generation_info={"stop_reason": gen.stop_reason})]
        )
