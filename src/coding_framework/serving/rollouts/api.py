"""The rollout API's models, shared by the server and ``coding-framework deploy``: the body of POST
/v1/rollouts (`RolloutRequest`, validated here for both: the server answers a 400 naming the field, the
CLI a one-line error naming the flag) and the status object every rollout endpoint answers
(`RolloutStatus`, built by `record.Rollout.status` and read by the CLI).

A request leaves the budget and probe rate it does not give to the server's `RolloutPolicy`
(`RolloutRequest.budget`, `RolloutRequest.probe_plan`); ``null`` for ``max_duration_s`` or ``max_graded``
means no limit. The status models give the fields a client may not find (those an older server does not
send) their empty value, so ``deploy`` reads any server's answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from coding_framework.config.rollout import InconclusivePolicy, RolloutPolicy, RolloutStrategy
from coding_framework.serving.rollouts.outcomes import Outcome, Source

__all__ = [
    "ArmStatus",
    "Budget",
    "BudgetStatus",
    "ComparisonStatus",
    "Decision",
    "DecisionAction",
    "LatencyStatus",
    "ProbePlan",
    "ProbeRequest",
    "RolloutPhase",
    "RolloutRequest",
    "RolloutStatus",
    "SrmStatus",
    "first_error",
]

RolloutPhase = Literal["running", "promoted", "rolled_back", "inconclusive", "aborted"]
DecisionAction = Literal["start", "advance", "promote", "rollback", "abort", "hold", "resume"]


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class Budget:
    """When a rollout without a verdict ends ``inconclusive``, and what happens then."""

    max_duration_s: float | None
    max_graded: int | None
    on_inconclusive: InconclusivePolicy


@dataclass(frozen=True)
class ProbePlan:
    """A probe set: ``source`` (benchmark, NAME:SPLIT or a problem-record JSONL on the server), problems per
    second to each arm, and at most ``limit`` problems (None: cycle until the rollout ends)."""

    source: str
    rate_per_s: float
    limit: int | None


class ProbeRequest(BaseModel):
    """The ``probe`` of a rollout request; ``rate_per_s`` None: the policy's ``probe_rate_per_s``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str
    rate_per_s: float | None = None
    limit: int | None = None

    @model_validator(mode="before")
    @classmethod
    def _shape(cls, body: Any) -> Any:
        source = body.get("source") if isinstance(body, dict) else None
        if not isinstance(source, str) or not source.strip():
            raise ValueError('probe must be an object {"source": SRC, "rate_per_s": R, "limit": N|null}; SRC '
                             "is a benchmark, NAME:SPLIT or a problem-record JSONL on the server")
        unknown = set(body) - set(cls.model_fields)
        if unknown:
            raise ValueError(f"probe has unknown fields {sorted(unknown)}; use source, rate_per_s, limit")
        return {**body, "source": source.strip()}

    @field_validator("rate_per_s", mode="before")
    @classmethod
    def _rate(cls, rate: Any) -> Any:
        if rate is not None and (not _number(rate) or not 0 < rate <= 100):
            raise ValueError(f"probe.rate_per_s must be within (0, 100], got {rate!r}")
        return rate

    @field_validator("limit", mode="before")
    @classmethod
    def _limit(cls, limit: Any) -> Any:
        if limit is not None and (not _integer(limit) or limit < 1):
            raise ValueError(f"probe.limit must be a positive integer or null, got {limit!r}")
        return limit


class RolloutRequest(BaseModel):
    """The body of POST /v1/rollouts. Unknown top-level fields are ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    candidate: str
    strategy: RolloutStrategy = "canary"
    steps: list[int] | None = None
    max_duration_s: float | None = None
    max_graded: int | None = None
    on_inconclusive: InconclusivePolicy | None = None
    probe: ProbeRequest | None = None

    @field_validator("candidate", mode="before")
    @classmethod
    def _candidate(cls, candidate: Any) -> Any:
        if not isinstance(candidate, str) or not candidate.strip():
            raise ValueError("candidate must be a model spec string")
        return candidate.strip()

    @field_validator("strategy", mode="before")
    @classmethod
    def _strategy(cls, strategy: Any) -> Any:
        names = get_args(RolloutStrategy)
        if strategy not in names:
            raise ValueError(f"unknown strategy {strategy!r}; use one of {', '.join(names)}")
        return strategy

    @field_validator("steps", mode="before")
    @classmethod
    def _steps(cls, steps: Any) -> Any:
        if steps is None:
            return None
        if not isinstance(steps, list) or not steps or not all(_integer(s) for s in steps):
            raise ValueError("steps must be a list of integer percents, e.g. [10, 50, 100]")
        try:
            return RolloutPolicy(steps=steps).steps
        except ValidationError as exc:
            raise ValueError(exc.errors()[0]["msg"].removeprefix("Value error, ")) from None

    @field_validator("max_duration_s", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        if value is not None and (not _number(value) or value <= 0):
            raise ValueError(f"max_duration_s must be a positive number or null, got {value!r}")
        return value

    @field_validator("max_graded", mode="before")
    @classmethod
    def _graded(cls, value: Any) -> Any:
        if value is not None and (not _integer(value) or value <= 0):
            raise ValueError(f"max_graded must be a positive integer or null, got {value!r}")
        return value

    @field_validator("on_inconclusive", mode="before")
    @classmethod
    def _on_inconclusive(cls, value: Any) -> Any:
        if value not in get_args(InconclusivePolicy):
            raise ValueError("on_inconclusive must be rollback or hold")
        return value

    def budget(self, policy: RolloutPolicy) -> Budget:
        """The request's budget; what it leaves out is the policy's."""
        given = self.model_fields_set
        return Budget(
            max_duration_s=self.max_duration_s if "max_duration_s" in given else policy.max_duration_s,
            max_graded=self.max_graded if "max_graded" in given else policy.max_graded,
            on_inconclusive=self.on_inconclusive or policy.on_inconclusive,
        )

    def probe_plan(self, policy: RolloutPolicy) -> ProbePlan | None:
        if self.probe is None:
            return None
        rate = self.probe.rate_per_s if self.probe.rate_per_s is not None else policy.probe_rate_per_s
        return ProbePlan(self.probe.source, float(rate), self.probe.limit)


def first_error(exc: ValidationError) -> tuple[str | None, str]:
    """The first error of a request's validation as (field path, one-line message), e.g.
    ``("probe.rate_per_s", "probe.rate_per_s must be within (0, 100], got 0")``."""
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or None
    if where is None:
        return None, "the request body must be a JSON object"
    if error["type"] == "missing":
        return where, f"{where} is required"
    message = error["msg"].removeprefix("Value error, ")
    return where, message if error["type"] == "value_error" else f"{where}: {message}"


class _Status(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class LatencyStatus(_Status):
    """Milliseconds, over the latest successful requests (None before any)."""

    p50: float | None = None
    p90: float | None = None
    p99: float | None = None


class ArmStatus(_Status):
    """One version's counts in the rollout (``graded``/``passed``: client grades; ``probe_*``: probes';
    ``probe_errors``: probes the version failed to answer, so they have no grade)."""

    requests: int
    errors: int
    error_rate: float | None = None
    graded: int
    passed: int = 0
    pass_rate: float | None
    probe_graded: int = 0
    probe_passed: int = 0
    probe_pass_rate: float | None = None
    probe_unparseable: int = 0
    probe_crashed: int = 0
    probe_timed_out: int = 0
    probe_errors: int = 0
    outcomes: dict[Source, dict[Outcome, int]] = Field(default_factory=dict)
    latency_ms: LatencyStatus
    tokens: int


class ComparisonStatus(_Status):
    """The sequential test's last look: candidate minus champion rate, its always-valid interval, and the
    lower bound of the relative contrast (``stats.Comparison``)."""

    estimate: float
    lower: float
    upper: float
    verdict: Literal["worse", "non_inferior", "continue"]
    relative_lower: float | None = None


class SrmStatus(_Status):
    log_evidence: float
    threshold: float


class BudgetStatus(_Status):
    elapsed_s: float
    graded: int
    max_duration_s: float | None
    max_graded: int | None
    on_inconclusive: InconclusivePolicy


class Decision(_Status):
    at: float
    action: DecisionAction
    weights: dict[str, int]
    reason: str
    test: ComparisonStatus | None
    arms: dict[str, ArmStatus]


class RolloutStatus(_Status):
    """GET /v1/rollouts/{id} (and the answer of starting or aborting one). ``weights``: each version's
    percent of new sessions; ``step``: the index into ``steps``; ``held``: inconclusive with
    ``on_inconclusive=hold``. ``guardrails``: each outcome guardrail's last test (on the rate of answers
    without that outcome); a step advances only when ``test`` and every one of them are ``non_inferior``.
    ``probe_pairs``: probe problems both arms answered, by ``"champion's outcome,candidate's outcome"``."""

    id: str
    status: RolloutPhase
    candidate_version: str
    champion_version: str
    strategy: RolloutStrategy
    steps: list[int] = Field(default_factory=list)
    step: int = 0
    weights: dict[str, int]
    held: bool = False
    arms: dict[str, ArmStatus]
    reason: str
    test: ComparisonStatus | None = None
    guardrails: dict[str, ComparisonStatus] = Field(default_factory=dict)
    probe_pairs: dict[str, int] = Field(default_factory=dict)
    srm: SrmStatus | None = None
    budget: BudgetStatus | None = None
    probe: ProbePlan | None = None
    decisions: list[Decision] = Field(default_factory=list)
    mlflow_run_id: str | None = None

    @property
    def candidate(self) -> ArmStatus:
        return self.arms[self.candidate_version]

    @property
    def champion(self) -> ArmStatus:
        return self.arms[self.champion_version]
