"""Experiment tracking: MLflow always (SQLite store in the run directory by default), W&B when asked for.

A ``Tracker`` receives params once, metrics per step, checkpoint directories as artifacts and finally the
trained model, which MLflow registers in its model registry as a pyfunc wrapping the Hugging Face model
directory. A resumed run continues the same MLflow run (its id is kept in ``<run_dir>/tracking.json``).

While an MLflow run is open, MLflow's own ``SystemMetricsMonitor`` (psutil; pynvml when a GPU is present)
samples CPU, memory, disk, network and GPU use on a thread and logs them as ``system/*`` metrics.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import warnings
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, Protocol

from coding_framework.config.training import TrackingConfig
from coding_framework.logs import get_logger
from coding_framework.models import ADAPTERS_DIR
from coding_framework.models.mlflow_fields import flatten, metric_key
from coding_framework.models.registry import (
    CHALLENGER_ALIAS,
    HF_ARTIFACT,
    mlflow_client,
    run_store_uri,
    tag_version,
)

log = get_logger(__name__)

TRACKING_FILE = "tracking.json"
class Tracker(Protocol):
    run_id: str

    def log_params(self, params: Mapping[str, Any]) -> None: ...

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None: ...

    def log_artifacts(self, path: Path, artifact_path: str) -> None: ...

    def prune_artifacts(self, artifact_path: str, keep: Collection[str]) -> None: ...

    def log_model(self, model_dir: Path, registered_name: str | None, *, challenger: bool = True,
                  tags: Mapping[str, str] | None = None) -> dict[str, Any]: ...

    def log_file(self, path: Path) -> None: ...

    def finish(self, status: str) -> None: ...


def _restore_uri(setter: Any, variable: str, value: str | None) -> None:
    """Put back mlflow's URI as the caller had it: ``value``, or unset (mlflow's own default)."""
    setter(value)
    if value is None:
        os.environ.pop(variable, None)


# Seconds between system-metric samples: short enough that a minutes-long run gets a curve.
SYSTEM_METRICS_INTERVAL_S = 2.0


def start_system_metrics(run_id: str, uri: str, interval_s: float = SYSTEM_METRICS_INTERVAL_S,
                         resume: bool = False) -> Any:
    """MLflow's ``SystemMetricsMonitor`` on ``run_id``, started; ``finish()`` it before ending the run."""
    from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor

    # Its start/stop notes ("Started monitoring system metrics", "Skip logging GPU metrics") are not
    # actionable, and would land in the middle of a run's progress display.
    logging.getLogger("mlflow.system_metrics").setLevel(logging.WARNING)
    monitor = SystemMetricsMonitor(run_id, sampling_interval=interval_s, resume_logging=resume,
                                   tracking_uri=uri)
    monitor.start()
    return monitor


class MLflowTracker:
    """One MLflow run; a new one, or the one recorded in ``run_dir`` when ``resume`` is set. System metrics
    are sampled every ``system_metrics_interval_s`` seconds until ``finish`` (None: not at all)."""

    def __init__(self, config: TrackingConfig, run_dir: Path, resume: bool = False,
                 system_metrics_interval_s: float | None = SYSTEM_METRICS_INTERVAL_S) -> None:
        self.uri = config.mlflow_uri or run_store_uri(run_dir)
        self.client = mlflow_client(self.uri)
        record = run_dir / TRACKING_FILE
        resumed = resume and record.is_file()
        if resumed:
            self.run_id = json.loads(record.read_text())["mlflow_run_id"]
            self.client.update_run(self.run_id, status="RUNNING")
        else:
            self.run_id = self._new_run(config, run_dir)
            record.write_text(json.dumps({"mlflow_run_id": self.run_id, "mlflow_uri": self.uri}) + "\n")
        interval = system_metrics_interval_s
        self.system_metrics = None
        if interval is not None:
            self.system_metrics = start_system_metrics(self.run_id, self.uri, interval, resumed)

    def _new_run(self, config: TrackingConfig, run_dir: Path) -> str:
        experiment = self.client.get_experiment_by_name(config.experiment)
        if experiment is None:
            exp_id = self.client.create_experiment(
                config.experiment, artifact_location=(run_dir / "mlartifacts").resolve().as_uri()
            )
        else:
            exp_id = experiment.experiment_id
        return str(self.client.create_run(exp_id, run_name=run_dir.name).info.run_id)

    def log_params(self, params: Mapping[str, Any]) -> None:
        from mlflow.entities import Param

        items = [Param(k, v) for k, v in flatten(params).items()]
        for i in range(0, len(items), 100):  # MLflow's per-request limit
            self.client.log_batch(self.run_id, params=items[i : i + 100])

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        import time

        from mlflow.entities import Metric

        stamp = int(time.time() * 1000)
        items = [Metric(metric_key(k), float(v), stamp, step) for k, v in metrics.items()]
        self.client.log_batch(self.run_id, metrics=items)

    def log_artifacts(self, path: Path, artifact_path: str) -> None:
        self.client.log_artifacts(self.run_id, str(path), artifact_path)

    def prune_artifacts(self, artifact_path: str, keep: Collection[str]) -> None:
        """Delete the entries directly under ``artifact_path`` whose names are not in ``keep``: the
        checkpoints the run directory pruned, which would otherwise pile up in the store (5.6 GB over 50
        steps of a 135M model). A store that cannot delete keeps them, with a warning."""
        from mlflow.exceptions import MlflowException
        from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

        stale = [f.path for f in self.client.list_artifacts(self.run_id, artifact_path)
                 if f.path.rsplit("/", 1)[-1] not in keep]
        if not stale:
            return
        repo = get_artifact_repository(self.client.get_run(self.run_id).info.artifact_uri)
        for path in stale:
            try:
                repo.delete_artifacts(path)
            except (NotImplementedError, MlflowException) as exc:
                log.warning("artifact_not_pruned", path=path, reason=str(exc))
                return

    def log_model(self, model_dir: Path, registered_name: str | None, *, challenger: bool = True,
                  tags: Mapping[str, str] | None = None) -> dict[str, Any]:
        """Log ``model_dir`` as a pyfunc model in this run and register it under ``registered_name``, with
        the alias ``challenger`` when ``challenger`` (a gated-out model gets none) and ``tags``."""
        import mlflow

        from coding_framework.training.run.pyfunc import pip_requirements, write_loader

        # set_*_uri also sets the environment variables; restore exactly what the caller had (an unset one
        # stays unset), or later code in this process would read this run's store as the user's registry.
        previous = os.environ.get("MLFLOW_TRACKING_URI"), os.environ.get("MLFLOW_REGISTRY_URI")
        mlflow.set_tracking_uri(self.uri)
        mlflow.set_registry_uri(self.uri)
        mlflow_log = logging.getLogger("mlflow")
        level = mlflow_log.level
        mlflow_log.setLevel(logging.ERROR)  # its notes on cloudpickle and signatures are not actionable here
        try:
            with mlflow.start_run(run_id=self.run_id), warnings.catch_warnings(), \
                    tempfile.TemporaryDirectory() as code:
                warnings.simplefilter("ignore")
                info = mlflow.pyfunc.log_model(
                    name="model",
                    python_model=write_loader(Path(code)),
                    artifacts={HF_ARTIFACT: str(model_dir)},
                    registered_model_name=registered_name,
                    pip_requirements=pip_requirements(),
                )
        finally:
            mlflow_log.setLevel(level)
            _restore_uri(mlflow.set_tracking_uri, "MLFLOW_TRACKING_URI", previous[0])
            _restore_uri(mlflow.set_registry_uri, "MLFLOW_REGISTRY_URI", previous[1])
        out: dict[str, Any] = {"model_uri": info.model_uri}
        if registered_name:
            version = int(info.registered_model_version)
            # Every loader attests a downloaded version against these, adapter by adapter.
            adapters = tag_version(self.client, registered_name, version, model_dir)
            for key, value in (tags or {}).items():
                self.client.set_model_version_tag(registered_name, str(version), key, value)
            if challenger:  # a candidate: serving's rollout promotes it to `champion` or rolls it back
                self.client.set_registered_model_alias(registered_name, CHALLENGER_ALIAS, str(version))
            if adapters:
                self.client.log_artifacts(self.run_id, str(model_dir / ADAPTERS_DIR), ADAPTERS_DIR)
                out["adapters"] = adapters
            out.update(registered_model=registered_name, registered_version=version,
                       alias=CHALLENGER_ALIAS if challenger else None)
        return out

    def log_file(self, path: Path) -> None:
        self.client.log_artifact(self.run_id, str(path))

    def finish(self, status: str = "FINISHED") -> None:
        if self.system_metrics is not None:
            self.system_metrics.finish()  # flushes the last samples while the run still accepts them
            self.system_metrics = None
        self.client.set_terminated(self.run_id, status=status)


class WandbTracker:
    """Mirrors params and metrics to Weights & Biases (only built when wandb imports and a project is set)."""

    def __init__(self, project: str, run_dir: Path, resume: bool) -> None:
        import wandb

        record = run_dir / "wandb.json"
        run_id = json.loads(record.read_text())["id"] if resume and record.is_file() else None
        self.run = wandb.init(project=project, dir=str(run_dir), id=run_id, resume="allow", name=run_dir.name)
        self.run_id = self.run.id
        record.write_text(json.dumps({"id": self.run_id}) + "\n")

    def log_params(self, params: Mapping[str, Any]) -> None:
        self.run.config.update(dict(params), allow_val_change=True)

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        self.run.log(dict(metrics), step=step)

    def log_artifacts(self, path: Path, artifact_path: str) -> None:
        del path, artifact_path  # checkpoints stay in MLflow; W&B gets the curves only

    def prune_artifacts(self, artifact_path: str, keep: Collection[str]) -> None:
        del artifact_path, keep

    def log_model(self, model_dir: Path, registered_name: str | None, *, challenger: bool = True,
                  tags: Mapping[str, str] | None = None) -> dict[str, Any]:
        del model_dir, registered_name, challenger, tags
        return {}

    def log_file(self, path: Path) -> None:
        del path  # files stay in MLflow

    def finish(self, status: str = "FINISHED") -> None:
        self.run.finish(exit_code=0 if status == "FINISHED" else 1)


class Trackers:
    """Fans every call out to the configured trackers; MLflow's run id is the run's id."""

    def __init__(self, config: TrackingConfig, run_dir: Path, resume: bool = False) -> None:
        self.mlflow = MLflowTracker(config, run_dir, resume)
        self.all: list[Tracker] = [self.mlflow]
        if config.wandb_project:
            try:
                self.all.append(WandbTracker(config.wandb_project, run_dir, resume))
            except ImportError:
                log.warning("wandb_unavailable", reason="wandb is not installed; tracking with MLflow only")
        self.run_id = self.mlflow.run_id

    def log_params(self, params: Mapping[str, Any]) -> None:
        for t in self.all:
            t.log_params(params)

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        for t in self.all:
            t.log_metrics(metrics, step)

    def log_artifacts(self, path: Path, artifact_path: str) -> None:
        for t in self.all:
            t.log_artifacts(path, artifact_path)

    def prune_artifacts(self, artifact_path: str, keep: Collection[str]) -> None:
        for t in self.all:
            t.prune_artifacts(artifact_path, keep)

    def log_model(self, model_dir: Path, registered_name: str | None, *, challenger: bool = True,
                  tags: Mapping[str, str] | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for t in self.all:
            out.update(t.log_model(model_dir, registered_name, challenger=challenger, tags=tags))
        return out

    def log_file(self, path: Path) -> None:
        for t in self.all:
            t.log_file(path)

    def finish(self, status: str = "FINISHED") -> None:
        for t in self.all:
            t.finish(status)
