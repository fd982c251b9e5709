"""A sweep in MLflow: a parent run (the search space, every trial's values, metric and status, the best),
with each trial's own trainer run nested under it (``mlflow.parentRunId``) in the same SQLite store."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from mlflow.entities import Metric, Param, RunTag
from mlflow.tracking import MlflowClient

from coding_framework.config.sweep import SweepConfig
from coding_framework.models.mlflow_fields import flatten, metric_key
from coding_framework.training.run.tracking import TRACKING_FILE

__all__ = ["STOPPED_EARLY", "SweepRun"]

STOPPED_EARLY = "stopped_early"


class SweepRun:
    """The parent run; the experiment (artifacts under ``sweep_dir/mlartifacts``) is created if new."""

    def __init__(self, sweep: SweepConfig, sweep_dir: Path) -> None:
        self.uri = f"sqlite:///{sweep_dir / 'mlflow.db'}"
        self.client = MlflowClient(tracking_uri=self.uri)
        experiment = self.client.get_experiment_by_name(sweep.experiment)
        if experiment is None:
            exp_id = self.client.create_experiment(
                sweep.experiment, artifact_location=(sweep_dir / "mlartifacts").as_uri()
            )
        else:
            exp_id = experiment.experiment_id
        tags = {"sweep.role": "parent", "sweep.dir": str(sweep_dir)}
        run = self.client.create_run(exp_id, run_name=f"sweep-{sweep_dir.name}", tags=tags)
        self.run_id = run.info.run_id
        params = flatten(sweep.model_dump(mode="json", exclude={"search_space", "overrides"}))
        params |= {f"search_space.{k}": json.dumps(v.model_dump()) for k, v in sweep.search_space.items()}
        params |= {f"overrides.{k}": json.dumps(v) for k, v in sweep.overrides.items()}
        items = [Param(k, v) for k, v in params.items()]
        for i in range(0, len(items), 100):  # MLflow's per-request limit
            self.client.log_batch(self.run_id, params=items[i : i + 100])

    def link_trial(self, run_dir: Path, trial_id: str, status: str) -> str | None:
        """Nest the trial's trainer run under this one and tag its status; a trial that the scheduler
        stopped is marked KILLED, as its trainer marks it when the stop reaches it (Tune does not wait for
        that). Returns its run id, if it began."""
        record = run_dir / TRACKING_FILE
        if not record.is_file():
            return None
        run_id = str(json.loads(record.read_text())["mlflow_run_id"])
        tags = {"mlflow.parentRunId": self.run_id, "sweep.trial_id": trial_id, "sweep.status": status}
        self.client.log_batch(run_id, tags=[RunTag(k, v) for k, v in tags.items()])
        if status == STOPPED_EARLY:
            self.client.set_terminated(run_id, status="KILLED")
        return run_id

    def record(
        self, trials: list[dict[str, Any]], best: dict[str, Any] | None, metric: str, plot: Path
    ) -> None:
        """The trials table (``trials.json``) and plot, counts per status, and the best trial's values and
        metric."""
        self.client.log_dict(self.run_id, {"trials": trials}, "trials.json")
        self.client.log_artifact(self.run_id, str(plot))
        counts: dict[str, float] = {"trials": float(len(trials))}
        for t in trials:
            counts[f"trials_{t['status']}"] = counts.get(f"trials_{t['status']}", 0.0) + 1
        if best is not None:
            counts[f"best_{metric_key(metric)}"] = float(best["metric"])
            best_params = flatten({"best": best["params"]})
            self.client.log_batch(self.run_id, params=[Param(k, v) for k, v in best_params.items()])
            self.client.set_tag(self.run_id, "sweep.best_trial_id", best["trial_id"])
            if best["mlflow_run_id"]:
                self.client.set_tag(self.run_id, "sweep.best_run_id", best["mlflow_run_id"])
        stamp = int(time.time() * 1000)
        self.client.log_batch(self.run_id, metrics=[Metric(k, v, stamp, 0) for k, v in counts.items()])

    def finish(self, status: str) -> None:
        self.client.set_terminated(self.run_id, status=status)
