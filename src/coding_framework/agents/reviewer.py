"""The Reviewer, in two kinds: a static one built on real analysis, and an LLM-backed one."""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod

from langchain_core.language_models import BaseChatModel

from coding_framework.agents.analysis import complexity_findings, lint_findings
from coding_framework.agents.chat import message_text, token_usage
from coding_framework.agents.generator import sampling_params
from coding_framework.agents.types import Execution, Finding, Review
from coding_framework.config.agents import ReviewerConfig
from coding_framework.config.policies import REVIEWER_ROLE
from coding_framework.llm.base import TokenEngine
from coding_framework.llm.session import TokenSession
from coding_framework.problems import Problem

"""The role an LLM Reviewer's calls carry to the engine (its adapter, with per-role adapters) and are recorded
under in a TokenSession (its training rows' role)."""

REVIEW_SYSTEM_PROMPT = (
    "You are a careful Python code reviewer. Point out the bugs that make the code wrong and how to fix "
    "them, in at most five short bullet points. Do not rewrite the whole function. If the code is "
    "correct, answer only LGTM."
)


def review_messages(problem: Problem, code: str, execution: Execution) -> list[dict[str, str]]:
    """What an LLM reviewer is asked: the problem, the draft and the Executor's verdict on it."""
    user = (
        f"Problem:\n{problem.prompt.strip()}\n\nCode:\n```python\n{code.strip()}\n```\n\n"
        f"Test results: {execution.feedback}\n\nReview the code."
    )
    return [{"role": "system", "content": REVIEW_SYSTEM_PROMPT}, {"role": "user", "content": user}]


class CodeReviewer(ABC):
    """Critiques a draft given the Executor's verdict."""

    def __init__(self, config: ReviewerConfig | None = None) -> None:
        self.config = config or ReviewerConfig()

    @abstractmethod
    async def areview(self, problem: Problem, code: str, execution: Execution) -> Review: ...


class StaticReviewer(CodeReviewer):
    """Needs no model: failing tests, ruff findings and complexity (branches, nesting, function length)."""

    async def areview(self, problem: Problem, code: str, execution: Execution) -> Review:
        cfg = self.config
        # The Executor's feedback already quotes the first failing test; list the others.
        findings = [Finding(kind="test", message=line) for line in execution.failures[1:]]
        structural = complexity_findings(code, cfg.max_branches, cfg.max_nesting, cfg.max_function_lines)
        syntax_error = any(f.kind == "syntax" for f in structural)
        if not syntax_error:
            findings += await lint_findings(code, cfg.lint_select)
        findings += structural
        return Review(source="static", text=render_findings(findings, cfg.max_findings), findings=findings)


def render_findings(findings: list[Finding], limit: int) -> str:
    if not findings:
        return "Static review: no lint or complexity findings."
    shown = [f"- {f.render()}" for f in findings[:limit]]
    more = len(findings) - limit
    if more > 0:
        shown.append(f"- ... and {more} more")
    return "Static review:\n" + "\n".join(shown)


class LLMReviewer(CodeReviewer):
    """Asks a model for a critique of the draft and its test results.

    Its one backend decides how: a ``chat_model`` (inference), or an ``engine`` called token-in/token-out
    through a TokenSession of its own (training), so the review carries its call's record (role
    ``reviewer``: prompt ids, response ids, logprobs) and can be trained on its own credit.
    """

    def __init__(
        self,
        chat_model: BaseChatModel | None = None,
        config: ReviewerConfig | None = None,
        *,
        engine: TokenEngine | None = None,
    ) -> None:
        super().__init__(config)
        if (chat_model is None) == (engine is None):
            raise ValueError("an LLMReviewer needs exactly one backend: a chat_model or a TokenEngine")
        self.chat_model = chat_model
        self.engine = engine
        self.params = sampling_params(self.config.sampling)

    async def areview(self, problem: Problem, code: str, execution: Execution) -> Review:
        if self.engine is not None:
            return await self._review_in_session(problem, code, execution)
        assert self.chat_model is not None
        answer = await self.chat_model.ainvoke(review_messages(problem, code, execution))
        prompt_tokens, completion_tokens = token_usage(answer)
        text = message_text(answer).strip() or "(the reviewer returned no text)"
        return Review(
            source="llm", text=text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
        )

    async def _review_in_session(self, problem: Problem, code: str, execution: Execution) -> Review:
        assert self.engine is not None
        session = TokenSession(self.engine.tokenizer)
        session.add_messages(review_messages(problem, code, execution))
        generation = await session.agenerate(self.engine, self.params, role=REVIEWER_ROLE)
        record = dataclasses.asdict(session.calls[-1])
        return Review(
            source="llm",
            text=generation.text.strip() or "(the reviewer returned no text)",
            prompt_tokens=len(record["prompt_ids"]),
            completion_tokens=len(record["response_ids"]),
            record=record,
        )
