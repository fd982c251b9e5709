"""Agent configuration: which backend each role (Generator, Executor, Reviewer) uses, and its knobs."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from coding_framework.config.llm import SamplingConfig
from coding_framework.config.loader import StrictModel
from coding_framework.config.model_ref import MODEL_HELP, ModelRef, ModelSpec, parse_model_ref

AgentMode = Literal["training", "inference"]
ReviewerBackend = Literal["static", "llm", "none"]


def _sampling(max_new_tokens: int) -> SamplingConfig:
    return SamplingConfig(max_new_tokens=max_new_tokens, temperature=0.2, top_p=0.95)


class GeneratorConfig(StrictModel):
    """The Generator writes code with an LLM; in the training graph its calls go through a TokenSession."""

    model: ModelSpec | None = Field(None, description="The Generator's model spec; null uses `agents.model`.")
    sampling: SamplingConfig = Field(default_factory=lambda: _sampling(512))


class ExecutorConfig(StrictModel):
    """The Executor is rule-based: it grades code in the sandbox and turns the result into feedback."""

    max_feedback_chars: int = Field(
        1200,
        ge=100,
        description="Longest feedback handed back to the Generator; the rest is cut with a marker.",
    )
    max_output_chars: int = Field(
        300, ge=0, description="Longest stdout/stderr excerpt quoted in the feedback (0 quotes none)."
    )


class ReviewerConfig(StrictModel):
    """The Reviewer critiques code that failed (or, with `graph.review: always`, every draft).

    `static` needs no model: ruff lint findings, failing tests and ast complexity (branches, nesting depth,
    function length). `llm` asks a chat model. `none` skips the critique; revisions then rely on the
    Executor's feedback alone.
    """

    backend: ReviewerBackend = "static"
    model: ModelSpec | None = Field(
        None, description="Model spec for `backend: llm`; null uses `agents.model`."
    )
    sampling: SamplingConfig = Field(default_factory=lambda: _sampling(256))
    lint_select: list[str] = Field(
        default_factory=lambda: ["E9", "F", "B", "W6", "PLE", "SIM"],
        description="ruff rule prefixes the static reviewer reports (ruff `--select`).",
    )
    max_findings: int = Field(
        5, ge=1, description="Most findings listed in one review; the rest are counted."
    )
    max_branches: int = Field(10, ge=1, description="A function with more decision points is flagged.")
    max_nesting: int = Field(4, ge=1, description="A function with deeper nested blocks is flagged.")
    max_function_lines: int = Field(60, ge=1, description="A longer function is flagged.")


class AgentsConfig(StrictModel):
    """All three roles. YAML defaults: the shipped `agents` config."""

    model: ModelSpec = Field(
        parse_model_ref("embedded"), description=f"Every LLM-backed role's model. {MODEL_HELP}"
    )
    generator: GeneratorConfig = Field(default_factory=GeneratorConfig)
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)
    reviewer: ReviewerConfig = Field(default_factory=ReviewerConfig)
    vllm: dict[str, Any] = Field(
        default_factory=dict,
        description="For a `vllm:` model these agents start: fields of `llm.vllm_server.VLLMServerConfig` "
        "(max_num_seqs, dtype, ...).",
    )
    timeout_s: float = Field(
        120.0, gt=0, description="Seconds one request to a vLLM server or endpoint may take; in an "
        "evaluation a request past it fails its own sample (status `request_failed`), not the run.",
    )

    def generator_model(self) -> ModelRef:
        return self.generator.model or self.model

    def reviewer_model(self) -> ModelRef:
        return self.reviewer.model or self.model
