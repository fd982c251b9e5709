"""The body of POST /v1/rollouts, parsed at the edge into a typed request; bad input is a 400 naming its
field."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from coding_framework.config.rollout import RolloutPolicy
from coding_framework.serving.errors import bad_request
from coding_framework.serving.rollout import STRATEGIES
from coding_framework.serving.rollout_record import Budget, ProbePlan

__all__ = ["RolloutRequest", "parse_rollout"]


@dataclass(frozen=True)
class RolloutRequest:
    candidate: str
    strategy: str
    steps: list[int] | None
    budget: Budget
    probe: ProbePlan | None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _positive(body: dict[str, Any], key: str, default: Any, integer: bool = False) -> Any:
    """``body[key]`` when given (a positive number; null: no limit), else ``default``."""
    if key not in body:
        return default
    value = body[key]
    if value is None:
        return None
    if not _number(value) or value <= 0 or (integer and not isinstance(value, int)):
        kind = "a positive integer" if integer else "a positive number"
        raise bad_request(f"{key} must be {kind} or null, got {value!r}", key)
    return value


def _probe(body: Any, policy: RolloutPolicy) -> ProbePlan | None:
    if body is None:
        return None
    if not isinstance(body, dict) or not isinstance(body.get("source"), str) or not body["source"].strip():
        raise bad_request('probe must be an object {"source": SRC, "rate_per_s": R, "limit": N|null}; SRC is '
                          "a benchmark, NAME:SPLIT or a problem-record JSONL on the server", "probe")
    unknown = set(body) - {"source", "rate_per_s", "limit"}
    if unknown:
        raise bad_request(f"probe has unknown fields {sorted(unknown)}; use source, rate_per_s, limit",
                          "probe")
    rate = body.get("rate_per_s", policy.probe_rate_per_s)
    if not _number(rate) or not 0 < rate <= 100:
        raise bad_request(f"probe.rate_per_s must be within (0, 100], got {rate!r}", "probe.rate_per_s")
    limit = body.get("limit")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise bad_request(f"probe.limit must be a positive integer or null, got {limit!r}", "probe.limit")
    return ProbePlan(body["source"].strip(), float(rate), limit)


def parse_rollout(body: Any, policy: RolloutPolicy) -> RolloutRequest:
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    candidate, strategy, steps = body.get("candidate"), body.get("strategy", "canary"), body.get("steps")
    if not isinstance(candidate, str) or not candidate.strip():
        raise bad_request("candidate must be a model spec string", "candidate")
    if strategy not in STRATEGIES:
        raise bad_request(f"strategy must be one of {', '.join(STRATEGIES)}", "strategy")
    if steps is not None and (
        not isinstance(steps, list)
        or not steps
        or not all(isinstance(s, int) and not isinstance(s, bool) for s in steps)
    ):
        raise bad_request("steps must be a list of integer percents, e.g. [10, 50, 100]", "steps")
    on_inconclusive = body.get("on_inconclusive", policy.on_inconclusive)
    if on_inconclusive not in ("rollback", "hold"):
        raise bad_request("on_inconclusive must be rollback or hold", "on_inconclusive")
    budget = Budget(
        max_duration_s=_positive(body, "max_duration_s", policy.max_duration_s),
        max_graded=_positive(body, "max_graded", policy.max_graded, integer=True),
        on_inconclusive=on_inconclusive,
    )
    return RolloutRequest(candidate, strategy, steps, budget, _probe(body.get("probe"), policy))
