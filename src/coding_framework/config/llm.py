"""Which LLM backend generates, with which model, and its default sampling settings."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from coding_framework.config.embedded import EmbeddedModelConfig
from coding_framework.config.loader import ConfigError, StrictModel

SPEC_FORMS = '"embedded", "local:/path/to/model-dir" or "openai:http://host:port/v1@model-name"'


class SamplingConfig(StrictModel):
    """Default sampling for every call; callers may override per call."""

    max_new_tokens: int = Field(512, ge=1, description="Most tokens one call generates.")
    temperature: float = Field(0.0, ge=0, description="0 is greedy; 1 samples the model distribution.")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling mass; 1 keeps every token.")
    stop: list[str] = Field(default_factory=list, description="Generation ends once one of these appears.")
    seed: int | None = Field(None, description="Seeds sampling; None draws a fresh seed per call.")


class LLMConfig(StrictModel):
    """An LLM backend. Build one from a spec string with ``LLMConfig.from_spec``.

    ``backend: local`` runs ``model`` (``embedded`` = the bootstrapped default model, built on first use
    from ``embedded``; otherwise a Hugging Face model directory) in this process on ``device``.
    ``backend: openai`` calls an OpenAI-compatible server (vLLM) at ``base_url`` serving ``model``, and
    tokenizes with ``tokenizer`` (a model directory or ``embedded``), which must be the served model's.
    """

    backend: Literal["local", "openai"] = Field("local", description="`local` (in-process HF) or `openai`.")
    model: str = Field(
        "embedded", min_length=1, description="local: `embedded` or a model dir; openai: served name."
    )
    device: str = Field("auto", description="local: `auto` (CUDA if present), `cpu`, `cuda`, `cuda:1`...")
    dtype: Literal["float32", "bfloat16", "float16"] = Field(
        "float32", description="local: weight dtype; float32 keeps logprobs exact for RL audits."
    )
    max_batch_size: int = Field(32, ge=1, description="local: most sequences decoded together.")
    base_url: str | None = Field(None, description="openai: server URL including /v1.")
    api_key: str | None = Field(None, description="openai: API key; None uses $OPENAI_API_KEY if set.")
    tokenizer: str = Field("embedded", min_length=1, description="openai: tokenizer dir of the served model.")
    timeout_s: float = Field(120.0, gt=0, description="openai: per-request timeout.")
    max_retries: int = Field(3, ge=0, description="openai: retries on connection errors and 5xx.")
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    embedded: EmbeddedModelConfig = Field(
        default_factory=EmbeddedModelConfig, description="How the embedded model is built."
    )

    @model_validator(mode="after")
    def _backend_fields(self) -> LLMConfig:
        if self.backend == "openai" and not self.base_url:
            raise ValueError("backend 'openai' needs base_url, e.g. http://localhost:8000/v1")
        return self

    @classmethod
    def from_spec(cls, spec: str, **overrides: Any) -> LLMConfig:
        """``LLMConfig`` for a spec string (see ``parse_llm_spec``), other fields from ``overrides``."""
        try:
            return cls.model_validate({**overrides, **parse_llm_spec(spec)})
        except ValueError as exc:
            raise ConfigError(f"invalid LLM spec {spec!r}: {exc}") from None


def parse_llm_spec(spec: str) -> dict[str, str]:
    """``embedded`` | ``local:PATH`` | ``openai:URL@MODEL`` as LLMConfig fields, else a ConfigError."""
    spec = spec.strip()
    if spec == "embedded":
        return {"backend": "local", "model": "embedded"}
    kind, sep, rest = spec.partition(":")
    if sep and kind == "local" and rest:
        return {"backend": "local", "model": rest}
    if sep and kind == "openai":
        url, at, name = rest.rpartition("@")
        if not at or not url or not name:
            raise ConfigError(
                f"LLM spec {spec!r}: name the served model after '@', e.g. {SPEC_FORMS.split(' or ')[-1]}"
            )
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"LLM spec {spec!r}: the server URL must start with http:// or https://")
        return {"backend": "openai", "base_url": url, "model": name}
    raise ConfigError(f"unrecognised LLM spec {spec!r}; expected {SPEC_FORMS}")
