"""The Generator on repository tasks: a tool-calling agent that reads, edits and tests a repository.

Each call is one model turn that should hold one tool call. With a ``chat_model`` (inference) the agent sends
the conversation so far. With an ``engine`` (training) every turn goes through one TokenSession per episode,
rebuilt from the earlier turns' records (``replay``): the session only appends, the model's own tokens carry
the loss, and the tool observations between them are prompt tokens (mask 0), so the trajectory is
token-exact across tool turns.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel

from coding_framework.agents.chat import message_text, token_usage
from coding_framework.agents.generator import sampling_params
from coding_framework.agents.replay import RecordedTurn
from coding_framework.agents.tool_calls import ToolFormat, format_for, tools_prompt
from coding_framework.config.policies import GENERATOR_ROLE
from coding_framework.config.repository import RepositoryConfig
from coding_framework.llm.base import TokenEngine
from coding_framework.llm.session import Message, TokenSession
from coding_framework.repotasks.task import RepoTask
from coding_framework.workspace import tool_specs

SYSTEM = (
    "You are a software engineer fixing an issue in a Python repository. Find the cause by reading the "
    "code, change the code (never the tests) so the issue is fixed, run the tests, then call finish."
)


def opening_messages(task: RepoTask, config: RepositoryConfig, fmt: ToolFormat) -> list[Message]:
    """The system prompt (role, tools, call format) and the issue with the repository's file list."""
    files = "\n".join(sorted(task.files))
    return [
        {"role": "system", "content": f"{SYSTEM}\n\n{tools_prompt(tool_specs(config.tools), fmt)}"},
        {"role": "user", "content": f"Issue:\n{task.problem_statement}\n\nRepository files:\n{files}"},
    ]


@dataclass(frozen=True)
class AgentTurn:
    """One model call: what it said, its token counts and (training) its record and the session so far."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    record: dict[str, Any] | None = None
    trajectory: dict[str, list[Any]] | None = None


class RepositoryAgent:
    """One instance serves many concurrent episodes: all per-episode data is passed in."""

    role = GENERATOR_ROLE

    def __init__(self, config: RepositoryConfig | None = None, *, chat_model: BaseChatModel | None = None,
                 engine: TokenEngine | None = None, tool_format: ToolFormat | None = None) -> None:
        if (chat_model is None) == (engine is None):
            raise ValueError("a RepositoryAgent needs exactly one backend: a chat_model or a TokenEngine")
        self.config = config or RepositoryConfig()
        self.chat_model, self.engine = chat_model, engine
        self.params = sampling_params(self.config.sampling)
        if tool_format is not None:
            self.format: ToolFormat = tool_format
        elif self.config.tool_format != "auto":
            self.format = self.config.tool_format
        else:
            self.format = format_for(engine.tokenizer) if engine is not None else "json"

    async def aturn(self, opening: Sequence[Message], exchanges: Sequence[dict[str, Any]],
                    calls: Sequence[dict[str, Any]] = (), seed: int | None = None) -> AgentTurn:
        """The next turn after ``opening`` and the earlier ``exchanges`` (each: the answer ``text`` and the
        ``observation`` messages that followed it); ``calls`` are their records in training."""
        if self.engine is not None:
            return await self._turn_in_session(opening, exchanges, calls)
        assert self.chat_model is not None
        messages = list(opening)
        for exchange in exchanges:
            messages.append({"role": "assistant", "content": exchange["text"]})
            messages += exchange["observation"]
        if seed is None:
            answer = await self.chat_model.ainvoke(messages)
        else:
            answer = await self.chat_model.ainvoke(messages, seed=seed + len(exchanges))
        prompt_tokens, completion_tokens = token_usage(answer)
        return AgentTurn(message_text(answer), prompt_tokens, completion_tokens)

    async def _turn_in_session(self, opening: Sequence[Message], exchanges: Sequence[dict[str, Any]],
                               calls: Sequence[dict[str, Any]]) -> AgentTurn:
        assert self.engine is not None
        if len(calls) != len(exchanges):
            raise ValueError(f"{len(exchanges)} earlier turns but {len(calls)} call records: the episode "
                             "state "
                             "is inconsistent (was it started on the inference graph?)")
        session = TokenSession(self.engine.tokenizer)
        session.add_messages(opening)
        for exchange, record in zip(exchanges, calls, strict=True):
            session.generate(RecordedTurn(record, self.engine.tokenizer), self.params, role=self.role,
                             turn=record["turn"])
            session.add_messages(exchange["observation"])
        await session.agenerate(self.engine, self.params, role=self.role, turn=len(exchanges))
        record = dataclasses.asdict(session.calls[-1])
        return AgentTurn(record["text"], len(record["prompt_ids"]), len(record["response_ids"]), record,
                         {"ids": session.ids, "loss_mask": session.loss_mask, "logprobs": session.logprobs})


__all__ = ["SYSTEM", "AgentTurn", "RepositoryAgent", "opening_messages"]
