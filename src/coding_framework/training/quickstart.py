"""The quickstart main job: embedded model -> baseline held-out pass@1 -> GRPO -> held-out pass@1 again.

One ``Trainer`` run does it all (its baseline and final evaluations are the before/after), on held-out
synthetic instances whose constants neither SFT nor RL ever saw. The job adds the before/after table
and the summary line ``make quickstart`` ends with; ``file_result`` files that line with its machine record
under ``<results dir>/<build>/seed<N>.json``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from rich.table import Table

from coding_framework.config.loader import load_config
from coding_framework.config.shipped import shipped_config
from coding_framework.config.training import TrainingConfig
from coding_framework.evaluation.machine import LoadMonitor, write_result
from coding_framework.training.run.results import TrainingResults
from coding_framework.training.trainer import Trainer

DEFAULT_CONFIG = "quickstart"  # the shipped config's name


class QuickstartResult(BaseModel):
    baseline_pass_at_1: float
    trained_pass_at_1: float
    heldout_problems: int
    heldout_eval: str
    seconds: float
    mlflow_run_id: str | None
    training: TrainingResults

    def summary(self) -> dict[str, Any]:
        t = self.training
        return {
            "baseline_pass@1": round(self.baseline_pass_at_1, 4),
            "trained_pass@1": round(self.trained_pass_at_1, 4),
            "improvement": round(self.trained_pass_at_1 - self.baseline_pass_at_1, 4),
            "heldout_problems": self.heldout_problems,
            "heldout_eval": self.heldout_eval,
            "seconds": round(self.seconds, 1),
            "mlflow_run_id": self.mlflow_run_id,
            "algorithm": t.algorithm,
            "seed": t.seed,
            "steps": t.steps,
            "registered_model": t.registered_model.get("registered_model"),
            "registered_version": t.registered_model.get("registered_version"),
            "report": str(t.report.get("html", "")),
            "run_dir": str(t.run_dir),
            "final_model_dir": str(t.final_model_dir),
            "data_sha256": t.data_sha256,
            "challenger": t.challenger,
            "gate": t.gate.summary() if t.gate is not None else None,
        }

    def table(self) -> Table:
        t = self.training
        table = Table(
            title=f"Held-out pass@1 before / after {t.algorithm.upper()} ({self.heldout_problems} problems, "
            f"{self.heldout_eval})"
        )
        table.add_column("family")
        table.add_column("before", justify="right")
        table.add_column("after", justify="right")
        for family in sorted(set(t.baseline_by_family) | set(t.heldout_by_family)):
            table.add_row(
                family,
                f"{t.baseline_by_family.get(family, 0.0):.2f}",
                f"{t.heldout_by_family.get(family, 0.0):.2f}",
            )
        table.add_row(
            "[bold]all[/bold]",
            f"[bold]{self.baseline_pass_at_1:.3f}[/bold]",
            f"[bold]{self.trained_pass_at_1:.3f}[/bold]",
        )
        return table


def quickstart_config(path: str | Path | None = None, seed: int | None = None) -> TrainingConfig:
    """The training YAML ``path`` (a file or a shipped name; unset: the shipped quickstart), seed
    overridden when given, with the baseline evaluation switched on (it is the "before")."""
    source = path if path is not None else shipped_config(DEFAULT_CONFIG)
    config = load_config(TrainingConfig, source, overrides={"seed": seed})
    return config.model_copy(update={"eval": config.eval.model_copy(update={"baseline": True})})


def eval_protocol(config: TrainingConfig) -> str:
    ev = config.eval
    drafts = "first draft" if ev.max_rounds == 1 else f"up to {ev.max_rounds} drafts"
    if ev.temperature == 0:
        return f"{drafts}, greedy"
    return f"{drafts}, T={ev.temperature:g}, {ev.samples} sample(s) per problem"


def default_run_dir(seed: int) -> Path:
    return Path("runs") / f"quickstart-seed{seed}-{time.strftime('%Y%m%d-%H%M%S')}"


def run_quickstart(config: TrainingConfig, run_dir: Path, progress: bool = True) -> QuickstartResult:
    start = time.perf_counter()
    results = Trainer(config, run_dir, progress=progress).run()
    assert results.baseline_pass_at_1 is not None and results.heldout_pass_at_1 is not None
    return QuickstartResult(
        baseline_pass_at_1=results.baseline_pass_at_1,
        trained_pass_at_1=results.heldout_pass_at_1,
        heldout_problems=results.heldout_problems,
        heldout_eval=eval_protocol(config),
        seconds=time.perf_counter() - start,
        mlflow_run_id=results.mlflow_run_id,
        training=results,
    )


def file_result(result: QuickstartResult, results_dir: Path, model_dir: Path, load: LoadMonitor) -> Path:
    """Write ``result`` (summary and per-family pass@1) as ``results_dir/<model dir name>/seed<N>.json``,
    with the machine record and the starting model's sha256, so each build keeps its own figures."""
    t = result.training
    figures = result.summary() | {
        "build": model_dir.name,
        "baseline_by_family": t.baseline_by_family,
        "heldout_by_family": t.heldout_by_family,
    }
    return write_result(results_dir / model_dir.name / f"seed{t.seed}.json", figures, load, model_dir)
