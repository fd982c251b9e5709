"""The Generator: an LLM writes (and revises) the entry-point function."""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel

from coding_framework.agents.chat import message_text, token_usage
from coding_framework.agents.executor import defines
from coding_framework.agents.replay import RecordedTurn
from coding_framework.agents.types import Draft
from coding_framework.config.agents import GeneratorConfig
from coding_framework.config.llm import SamplingConfig
from coding_framework.config.policies import GENERATOR_ROLE
from coding_framework.llm.base import SamplingParams, TokenEngine
from coding_framework.llm.sampling import row_seed
from coding_framework.llm.session import TokenSession
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


def sampling_params(settings: SamplingConfig) -> SamplingParams:
    return SamplingParams(
        max_new_tokens=settings.max_new_tokens,
        temperature=settings.temperature,
        top_p=settings.top_p,
        stop=tuple(settings.stop),
        seed=settings.seed,
    )


class CodeGenerator:
    """LLM-backed; writes the first draft, then revisions from feedback.

    Its one backend decides how. A ``chat_model`` (the inference graph) gets the whole conversation so
    far. An ``engine`` (the training graph) is called token-in/token-out through one TokenSession per
    episode, and each draft carries the call's record (prompt ids, response ids, logprobs) plus the
    session's ids, loss mask and logprobs. The session is rebuilt from the episode's earlier records on
    every call (see ``replay``), so the graph state holds only plain data and a resumed episode
    continues the exact same token sequence. The agent keeps no per-episode data, so one instance
    serves many concurrent episodes.
    """

    role = GENERATOR_ROLE
    """The role its calls are recorded under in the TokenSession."""

    def __init__(
        self,
        config: GeneratorConfig | None = None,
        *,
        chat_model: BaseChatModel | None = None,
        engine: TokenEngine | None = None,
    ) -> None:
        if (chat_model is None) == (engine is None):
            raise ValueError(
                "a CodeGenerator needs exactly one backend: a chat_model (inference) or a TokenEngine "
                "(training: token ids in and out)"
            )
        self.config = config or GeneratorConfig()
        self.chat_model = chat_model
        self.engine = engine
        self.params = sampling_params(self.config.sampling)

    async def adraft(
        self,
        problem: Problem,
        history: Sequence[Attempt] = (),
        calls: Sequence[dict[str, Any]] = (),
        seed: int | None = None,
    ) -> Draft:
        """Write the next draft. ``history`` holds the earlier rounds; ``calls`` their training records.
        ``seed`` (the episode's) seeds a chat model's call for this round; None keeps its own seed."""
        if self.engine is not None:
            return await self._draft_in_session(problem, history, calls)
        return await self._draft_with_chat_model(problem, history, seed)

    async def _draft_with_chat_model(
        self, problem: Problem, history: Sequence[Attempt], seed: int | None
    ) -> Draft:
        assert self.chat_model is not None
        if problem.answer_prefix is not None:
            raise ValueError(f"{problem.task_id}: an answer_prefix (training's guidance) needs the token "
                             "engine backend; a chat model cannot continue a given answer")
        messages = conversation(problem, history)
        if seed is None:
            answer = await self.chat_model.ainvoke(messages)
        else:
            answer = await self.chat_model.ainvoke(messages, seed=row_seed(seed, len(history)))
        text = message_text(answer)
        prompt_tokens, completion_tokens = token_usage(answer)
        return Draft(
            code=code_from_answer(problem, text),
            text=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
        )

    async def _draft_in_session(
        self, problem: Problem, history: Sequence[Attempt], calls: Sequence[dict[str, Any]]
    ) -> Draft:
        assert self.engine is not None
        if len(calls) != len(history):
            raise ValueError(
                f"{len(history)} earlier rounds but {len(calls)} call records: the episode state is "
                "inconsistent (was it started on the inference graph?)"
            )
        given = problem.answer_prefix or ""
        session = TokenSession(self.engine.tokenizer)
        session.add_messages(generation_messages(problem))
        for attempt, record in zip(history, calls, strict=True):
            if given and record["turn"] == 0:
                session.add_answer_prefix(given)
            session.generate(
                RecordedTurn(record, self.engine.tokenizer), self.params, role=self.role, turn=record["turn"]
            )
            session.add_messages(revision_messages(problem, attempt.code, attempt.feedback))
        if given and not history:
            session.add_answer_prefix(given)
        await session.agenerate(self.engine, self.params, role=self.role, turn=len(history))
        record = dataclasses.asdict(session.calls[-1])
        trajectory = {"ids": session.ids, "loss_mask": session.loss_mask, "logprobs": session.logprobs}
        text = str(session.messages[-1]["content"])
        return Draft(
            code=code_from_answer(problem, text),
            text=text,
            prompt_tokens=len(record["prompt_ids"]),
            completion_tokens=len(record["response_ids"]),
            record=record,
            trajectory=trajectory,
        )
