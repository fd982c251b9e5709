"""Which model generates, how this process runs it, and its default sampling settings."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from coding_framework.config.embedded import EmbeddedModelConfig
from coding_framework.config.loader import ConfigError, StrictModel
from coding_framework.config.model_ref import MODEL_HELP, ModelRef, ModelSpec, parse_model_ref


class SamplingConfig(StrictModel):
    """Default sampling for every call; callers may override per call."""

    max_new_tokens: int = Field(512, ge=1, description="Most tokens one call generates.")
    temperature: float = Field(0.0, ge=0, description="0 is greedy; 1 samples the model distribution.")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling mass; 1 keeps every token.")
    stop: list[str] = Field(default_factory=list, description="Generation ends once one of these appears.")
    seed: int | None = Field(None, description="Seeds sampling; None draws a fresh seed per call.")


class LLMConfig(StrictModel):
    """A model and how this process runs it. ``model`` is a ``ModelRef`` spec (``config.model_ref``):
    the embedded default, a model directory (its role adapters applied), a registry version or an
    OpenAI-compatible endpoint. A directory runs on ``engine`` unless the spec names one (``vllm:DIR``).
    An endpoint tokenizes with ``tokenizer``, which must be the served model's."""

    model: ModelSpec = Field(parse_model_ref("embedded"), description=MODEL_HELP)
    engine: Literal["local", "vllm"] = Field(
        "local", description="How a model directory runs: `local` (in this process) or `vllm` (a vLLM server "
        "this process starts and stops); a `vllm:` or `local:` prefix on `model` wins."
    )
    device: str = Field("auto", description="local: `auto` (CUDA if present), `cpu`, `cuda`, `cuda:1`...")
    dtype: Literal["float32", "bfloat16", "float16"] = Field(
        "float32", description="local: weight dtype; float32 keeps logprobs exact for RL audits."
    )
    max_batch_size: int = Field(32, ge=1, description="local: most sequences decoded together.")
    api_key: str | None = Field(None, description="endpoint: API key; None uses $OPENAI_API_KEY if set.")
    tokenizer: ModelSpec = Field(
        parse_model_ref("embedded"), description="endpoint: the served model's tokenizer (a model spec)."
    )
    timeout_s: float = Field(120.0, gt=0, description="endpoint: per-request timeout.")
    max_retries: int = Field(3, ge=0, description="endpoint: retries on connection errors and 5xx.")
    registry_uri: str | None = Field(
        None, description="MLflow registry for `models:/` specs; None uses $MLFLOW_TRACKING_URI."
    )
    vllm: dict[str, Any] = Field(
        default_factory=dict, description="engine vllm: fields of `llm.vllm_server.VLLMServerConfig`."
    )
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    embedded: EmbeddedModelConfig = Field(
        default_factory=EmbeddedModelConfig, description="How the embedded model is built."
    )

    @classmethod
    def from_spec(cls, spec: str | ModelRef, **overrides: Any) -> LLMConfig:
        """``LLMConfig`` for a model spec, other fields from ``overrides``; a one-line ConfigError."""
        try:
            return cls.model_validate({**overrides, "model": spec})
        except ValueError as exc:
            raise ConfigError(_first_error(exc)) from None


def _first_error(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        return str(first["msg"]).removeprefix("Value error, ")
    return str(exc)
