"""The Generator: an LLM writes (and revises) the entry-point function."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel

from coding_framework.agents.base import BaseAgent
from coding_framework.agents.chat import message_text, token_usage
from coding_framework.agents.executor import defines
from coding_framework.agents.types import Draft
from coding_framework.config.agents import AgentMode, GeneratorConfig
from coding_framework.problems import Problem
from coding_framework.problems.prompts import extract_code, generation_messages, revision_messages


@dataclass(frozen=True)
class Attempt:
    """A previous round as the Generator sees it: what it said, the code taken from it, the feedback."""

    text: str
    code: str
    feedback: str


def conversation(problem: Problem, history: Sequence[Attempt]) -> list[dict[str, str]]:
    """The chat so far: the task, then for each earlier attempt the answer and the feedback on it."""
    messages = generation_messages(problem)
    for attempt in history:
        messages.append({"role": "assistant", "content": attempt.text})
        messages += revision_messages(problem, attempt.code, attempt.feedback)
    return messages


def code_from_answer(problem: Problem, text: str) -> str:
    """The program in an answer, falling back to the entry point's signature.

    A full function (fenced or bare) is taken as is. When the answer has no ``def`` of the entry point
    and the prompt is a signature to complete, a fenced block or an indented answer is read as the body
    continuing that signature, so the result is still the whole function. Otherwise the best code
    found, or "".
    """
    code = extract_code(text, problem.entry_point)
    if code is not None and defines(code, problem.entry_point):
        return code
    if not problem.prompt_is_code or (code is None and not text[:1].isspace()):
        return code or ""
    body = (code if code is not None else text).rstrip()
    if not body[:1].isspace():  # extract_code dedents fenced blocks
        body = textwrap.indent(body, "    ")
    return problem.completion_program(body + "\n")


class CodeGenerator(BaseAgent):
    """LLM-backed. Inference mode calls a langchain chat model with the whole conversation so far."""

    role = "generator"

    def __init__(self, chat_model: BaseChatModel, config: GeneratorConfig | None = None,
                 mode: AgentMode = "inference") -> None:
        super().__init__(mode)
        self.chat_model = chat_model
        self.config = config or GeneratorConfig()

    async def adraft(self, problem: Problem, history: Sequence[Attempt] = (),
                     calls: Sequence[dict[str, Any]] = ()) -> Draft:
        """Write the next draft. ``history`` holds the earlier rounds of this episode."""
        answer = await self.chat_model.ainvoke(conversation(problem, history))
        text = message_text(answer)
        prompt_tokens, completion_tokens = token_usage(answer)
        self._count(prompt_tokens, completion_tokens)
        return Draft(code=code_from_answer(problem, text), text=text, prompt_tokens=prompt_tokens,
                     completion_tokens=completion_tokens)

    def _count(self, prompt_tokens: int, completion_tokens: int) -> None:
        self.state.calls += 1
        self.state.prompt_tokens += prompt_tokens
        self.state.completion_tokens += completion_tokens
