"""The token-level engine interface every LLM backend implements.

Training needs token ids and logprobs for every call, and must build multi-turn sequences
token-in/token-out (never re-rendering and re-tokenizing history). So the unit of generation here is
"prompt token ids in, generated token ids + logprobs out". Chat models for inference wrap an engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

FinishReason = Literal["stop", "length", "eos"]


@dataclass(frozen=True)
class SamplingParams:
    max_new_tokens: int = 256
    temperature: float = 1.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    seed: int | None = None
    # The calling role (``generator``, ``reviewer``, ...): an engine with per-role adapters decodes the
    # call through that role's adapter; engines without adapters ignore it.
    role: str | None = None

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0 (0 = greedy), got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")


@dataclass(frozen=True)
class Generation:
    """One completion. ``token_ids`` and ``logprobs`` align one-to-one; ``text`` decodes ``token_ids``."""

    token_ids: list[int]
    logprobs: list[float]
    text: str
    stop_reason: FinishReason
    policy_version: str
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.token_ids) != len(self.logprobs):
            raise ValueError(f"{len(self.token_ids)} token ids but {len(self.logprobs)} logprobs")


class EngineError(RuntimeError):
    """An engine is unreachable, misconfigured or returned something unusable; the message says which."""


class RequestFailed(EngineError):
    """One request failed while the engine itself is fine: it timed out, or the server rejected that
    request alone (a prompt longer than its context). An evaluation records the sample as failed and
    goes on; an unreachable or misconfigured engine still raises plain ``EngineError``."""


# The stop reason of a sample, and the state key of an episode, that a ``RequestFailed`` ended.
REQUEST_FAILED = "request_failed"


class BatchRequestsFailed(RequestFailed):
    """Some requests of a batch failed alone (each a ``RequestFailed``) while the others answered:
    ``outcomes`` holds, in the batch's order, each request's ``Generation`` or its ``RequestFailed``."""

    def __init__(self, outcomes: Sequence[Generation | RequestFailed]) -> None:
        failures = [o for o in outcomes if isinstance(o, RequestFailed)]
        super().__init__(f"{len(failures)} of {len(outcomes)} requests failed; the first: {failures[0]}")
        self.outcomes = list(outcomes)


@runtime_checkable
class TokenEngine(Protocol):
    """Generates from token ids. ``tokenizer`` is a Hugging Face tokenizer with a chat template."""

    tokenizer: Any

    @property
    def policy_version(self) -> str:
        """Names the weights that generate; every ``Generation`` carries it."""

    def generate(self, prompt_ids: Sequence[int], params: SamplingParams) -> Generation: ...

    def generate_batch(
        self, prompts: Sequence[Sequence[int]], params: SamplingParams
    ) -> list[Generation]: ...

    async def agenerate(self, prompt_ids: Sequence[int], params: SamplingParams) -> Generation: ...
