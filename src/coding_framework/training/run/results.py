"""The typed outcome of a training run (what ``train_agents`` returns and ``train`` prints as JSON)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from coding_framework.training.run.gate import GateResult

RESULTS_FILE = "results.json"


class StepRecord(BaseModel):
    """The metrics of one training step (keys as logged: ``reward_mean``, ``losses/clipfrac``, ...)."""

    step: int
    metrics: dict[str, float]


class TrainingResults(BaseModel):
    algorithm: str
    seed: int
    steps: int = Field(description="Training steps completed.")
    run_dir: Path
    final_metrics: dict[str, float] = Field(
        description="The last step's metrics plus the final held-out pass@1."
    )
    history: list[StepRecord]
    baseline_pass_at_1: float | None = Field(
        None, description="Held-out pass@1 before training (if evaluated)."
    )
    heldout_pass_at_1: float | None = Field(None, description="Held-out pass@1 after training.")
    heldout_problems: int
    heldout_by_family: dict[str, float] = Field(default_factory=dict)
    baseline_by_family: dict[str, float] = Field(default_factory=dict)
    early_stop: str | None = Field(None, description="Why training stopped before `steps`, if it did.")
    final_model_dir: Path | None = None
    checkpoint: Path | None = Field(None, description="The newest checkpoint.")
    mlflow_run_id: str | None = None
    registered_model: dict[str, Any] = Field(default_factory=dict)
    report: dict[str, Path] = Field(default_factory=dict, description="Report files (png, html).")
    audit: dict[str, float] = Field(
        default_factory=dict, description="Auditor totals (tokens checked, drift)."
    )
    seconds: float
    data_sha256: str | None = Field(None, description="sha256 of the canonical training + held-out sets.")
    gate: GateResult | None = Field(None, description="The regression gate's verdict (`training.run.gate`).")
    max_staleness: int = Field(0, description="`rollout.max_staleness` of the run.")
    engine: str = Field("local", description="The rollout engine (`rollout.engine`).")
    samples_per_s: float | None = Field(
        None, description="Episodes trained on per second of training steps (evaluations excluded)."
    )

    @property
    def challenger(self) -> bool:
        """Whether the final model was registered with the `challenger` alias."""
        return self.registered_model.get("alias") == "challenger"

    def summary(self) -> dict[str, Any]:
        """The JSON object the CLI prints last: the final metrics and where everything is."""
        out: dict[str, Any] = {"step": self.steps, "algorithm": self.algorithm, "seed": self.seed}
        out["reward_mean"] = self.final_metrics.get("reward_mean")
        out["pass_rate"] = self.final_metrics.get("pass_rate")
        out["heldout_pass@1"] = self.heldout_pass_at_1
        out["baseline_pass@1"] = self.baseline_pass_at_1
        out["heldout_problems"] = self.heldout_problems
        out["early_stop"] = self.early_stop
        out["seconds"] = round(self.seconds, 1)
        out["mlflow_run_id"] = self.mlflow_run_id
        out["run_dir"] = str(self.run_dir)
        out["final_model_dir"] = str(self.final_model_dir) if self.final_model_dir else None
        out["audit_offending_tokens"] = self.audit.get("offending_tokens")
        out["data_sha256"] = self.data_sha256
        out["challenger"] = self.challenger
        out["gate"] = self.gate.summary() if self.gate is not None else None
        out["engine"] = self.engine
        out["max_staleness"] = self.max_staleness
        out["samples_per_s"] = round(self.samples_per_s, 3) if self.samples_per_s is not None else None
        return out

    def write(self, path: Path | None = None) -> Path:
        out = path or self.run_dir / RESULTS_FILE
        out.write_text(self.model_dump_json(indent=2) + "\n")
        return out

    @classmethod
    def read(cls, path: Path) -> TrainingResults:
        return cls.model_validate(json.loads(Path(path).read_text()))


def samples_per_s(history: list[StepRecord]) -> float | None:
    """Episodes trained on per second of training steps (their rollout waits, updates and syncs)."""
    steps = [r.metrics for r in history if "seconds/train_step" in r.metrics]
    seconds = sum(m["seconds/train_step"] for m in steps)
    return sum(m["charts/samples"] for m in steps) / seconds if seconds else None
