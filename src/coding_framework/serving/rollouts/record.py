"""One rollout's record: its plan, arms, test state and decisions; the status the API returns
(`api.RolloutStatus`); and the plain-JSON form the state file keeps, so a restarted server resumes it with
the same id and counts."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from coding_framework.config.rollout import RolloutStrategy
from coding_framework.serving.rollouts.api import Budget, ProbePlan, RolloutPhase, RolloutStatus
from coding_framework.serving.rollouts.arms import Arm
from coding_framework.serving.rollouts.outcomes import Outcome, pair_key
from coding_framework.serving.rollouts.stats import Comparison, SequentialSRM, Verdict

__all__ = ["Rollout"]


@dataclass
class Rollout:
    id: str
    candidate: str
    champion: str
    strategy: RolloutStrategy
    steps: list[int]
    arms: dict[str, Arm]
    srm: SequentialSRM
    budget: Budget
    candidate_spec: str
    probe: ProbePlan | None = None
    started_at: float = field(default_factory=time.time)
    step: int = 0
    step_start_graded: int = 0
    status: RolloutPhase = "running"
    held: bool = False  # inconclusive with on_inconclusive=hold: the split stays, only rollbacks remain
    reason: str = ""
    test: Comparison | None = None
    guardrail_tests: dict[str, Comparison] = field(default_factory=dict)
    # probe pairs: (the champion's outcome, the candidate's) -> count
    pairs: Counter[tuple[Outcome, Outcome]] = field(default_factory=Counter)
    decisions: list[dict[str, Any]] = field(default_factory=list)
    mlflow_run_id: str | None = None

    @property
    def weight(self) -> int:
        """The candidate's percent of new sessions (shadow: 0, it never answers)."""
        if self.status == "promoted":
            return 100
        if (self.status != "running" and not self.held) or self.strategy == "shadow":
            return 0
        return self.steps[self.step]

    @property
    def elapsed_s(self) -> float:
        return time.time() - self.started_at

    def weights(self) -> dict[str, int]:
        return {self.champion: 100 - self.weight, self.candidate: self.weight}

    def to_status(self) -> RolloutStatus:
        """The contract's status object (GET /v1/rollouts/{id})."""
        return RolloutStatus.model_validate({
            "id": self.id, "status": self.status, "candidate_version": self.candidate,
            "champion_version": self.champion, "strategy": self.strategy, "steps": self.steps,
            "step": self.step, "weights": self.weights(), "held": self.held,
            "arms": {v: arm.snapshot() for v, arm in self.arms.items()}, "reason": self.reason,
            "test": self.test.as_dict() if self.test else None,
            "guardrails": {name: t.as_dict() for name, t in self.guardrail_tests.items()},
            "probe_pairs": {pair_key(a, b): n for (a, b), n in self.pairs.items()},
            "srm": {"log_evidence": self.srm.log_evidence, "threshold": self.srm.threshold},
            "budget": {"elapsed_s": round(self.elapsed_s, 3), "graded": self.arms[self.candidate].all_graded,
                       "max_duration_s": self.budget.max_duration_s, "max_graded": self.budget.max_graded,
                       "on_inconclusive": self.budget.on_inconclusive},
            "probe": self.probe,
            "decisions": list(self.decisions), "mlflow_run_id": self.mlflow_run_id,
        })

    def to_state(self) -> dict[str, Any]:
        return {
            "id": self.id, "candidate": self.candidate, "champion": self.champion, "strategy": self.strategy,
            "steps": self.steps, "candidate_spec": self.candidate_spec, "started_at": self.started_at,
            "step": self.step, "step_start_graded": self.step_start_graded, "status": self.status,
            "held": self.held, "reason": self.reason, "decisions": self.decisions,
            "mlflow_run_id": self.mlflow_run_id, "budget": vars(self.budget),
            "probe": None if self.probe is None else vars(self.probe),
            "test": self.test.as_dict() if self.test else None,
            "pairs": [[a.value, b.value, n] for (a, b), n in self.pairs.items()],
            "arms": {v: arm.state() for v, arm in self.arms.items()},
            "srm": {"weights": self.srm.weights, "counts": self.srm.counts,
                    "log_evidence": self.srm.log_evidence},
        }

    @classmethod
    def from_state(cls, data: dict[str, Any], error_window: int, srm_alpha: float,
                   srm_concentration: float) -> Rollout:
        srm = SequentialSRM(data["srm"]["weights"], srm_alpha, srm_concentration)
        srm.counts, srm.log_evidence = list(data["srm"]["counts"]), float(data["srm"]["log_evidence"])
        test = data["test"]
        return cls(
            id=data["id"], candidate=data["candidate"], champion=data["champion"],
            strategy=data["strategy"], steps=list(data["steps"]),
            arms={v: Arm.from_state(error_window, a) for v, a in data["arms"].items()}, srm=srm,
            budget=Budget(**data["budget"]), candidate_spec=data["candidate_spec"],
            probe=None if data["probe"] is None else ProbePlan(**data["probe"]),
            started_at=data["started_at"], step=data["step"], step_start_graded=data["step_start_graded"],
            status=data["status"], held=data["held"], reason=data["reason"], decisions=data["decisions"],
            mlflow_run_id=data["mlflow_run_id"],
            test=None if test is None else Comparison(test["estimate"], test["lower"], test["upper"],
                                                      Verdict(test["verdict"]), test.get("relative_lower")),
            pairs=Counter({(Outcome(a), Outcome(b)): n for a, b, n in data.get("pairs", [])}),
        )
