"""What the roles hand each other: a draft, an execution verdict and a review."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

FindingKind = Literal["test", "lint", "complexity", "syntax"]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Draft(_Frozen):
    """One Generator call: the extracted code and what the model actually said."""

    code: str
    text: str = Field(description="The raw model output the code was extracted from.")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    record: dict[str, Any] | None = Field(
        None, description="Training graph: this call's record (prompt ids, response ids, logprobs, ...)."
    )
    trajectory: dict[str, list[Any]] | None = Field(
        None, description="Training graph: the episode's session so far as `ids`, `loss_mask`, `logprobs`."
    )

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Execution(_Frozen):
    """The Executor's verdict on a draft.

    ``passed`` is True only when tests exist and all of them pass: code for a free-text problem (no
    tests) can run cleanly yet never counts as passed.
    """

    passed: bool
    status: str = Field(
        description="The grader's status (passed, failed, error, timeout, memory, crashed), or "
        "`untested`: a problem without tests whose code ran cleanly."
    )
    has_tests: bool
    tests_passed: int = 0
    tests_total: int = 0
    feedback: str = Field(description="Concise feedback for the Generator.")
    failures: list[str] = Field(default_factory=list, description="One line per failing test, in order.")


class Finding(_Frozen):
    kind: FindingKind
    message: str
    line: int | None = None

    def render(self) -> str:
        where = f"line {self.line}: " if self.line is not None else ""
        return f"[{self.kind}] {where}{self.message}"


class Review(_Frozen):
    """The Reviewer's critique; ``text`` is what the Generator reads."""

    source: Literal["static", "llm"]
    text: str
    findings: list[Finding] = Field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    record: dict[str, Any] | None = Field(
        None, description="Training graph, LLM reviewer: this call's record (`llm.session.CallRecord`)."
    )

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens
