"""A chat model that plays back scripted answers, for tests and the orchestration benchmark.

Each call takes the next scripted answer (or asks ``respond`` for one), records the messages it got and
reports token usage as whitespace-separated word counts, so token budgets can be exercised.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

Responder = Callable[[Sequence[BaseMessage]], str]


def words(text: str) -> int:
    return len(text.split())


class ScriptedChatModel(BaseChatModel):
    """Answers from ``answers`` in order (then fails loudly), or from ``respond(messages)`` when given."""

    answers: list[str] = Field(default_factory=list)
    respond: Responder | None = None
    calls: list[list[BaseMessage]] = Field(default_factory=list)
    record: bool = True
    """Keep every call's messages in ``calls``; the benchmark turns this off so the heap does not grow."""
    count: int = 0
    """Calls answered so far."""
    fail_on_call: int | None = None
    """Raise on this (0-based) call, to test resuming a run from its checkpoint."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _answer(self, messages: list[BaseMessage]) -> ChatResult:
        index = self.count
        if self.fail_on_call == index:
            raise RuntimeError(f"scripted failure on call {index}")
        self.count += 1
        if self.record:
            self.calls.append(list(messages))
        if self.respond is not None:
            text = self.respond(messages)
        elif index < len(self.answers):
            text = self.answers[index]
        else:
            raise AssertionError(f"ScriptedChatModel ran out of answers after {len(self.answers)} calls")
        prompt = sum(words(str(m.content)) for m in messages)
        usage = {"input_tokens": prompt, "output_tokens": words(text), "total_tokens": prompt + words(text)}
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text, usage_metadata=usage))])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._answer(messages)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._answer(messages)


def fenced(code: str) -> str:
    """An answer in the format the prompts ask for."""
    return f"Here is the function:\n```python\n{code.strip()}\n```\n"
