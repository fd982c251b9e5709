"""What a rollout leaves behind: one MLflow run per rollout and, on promotion, moved registry aliases.

The run (experiment ``coding-framework-rollouts``) holds the policy and versions as params, the per-arm
figures at each decision as metrics (step = decision number), each decision as a tag and all of them as
``decisions.json``, and the final status as tags. When the candidate is a registered model version,
promotion points the alias ``champion`` at it and ``previous`` at the version the champion was before.
Everything but opening the run happens on one background thread, in order, off the request path; an MLflow
failure is logged and never reaches serving.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coding_framework.logs import get_logger
from coding_framework.models.mlflow_fields import flatten, metric_key
from coding_framework.models.registry import (
    CHAMPION_ALIAS,
    PREVIOUS_ALIAS,
    fallback_tracking_uri,
    mlflow_client,
)

if TYPE_CHECKING:
    from mlflow.tracking import MlflowClient

__all__ = [
    "EXPERIMENT", "RolloutLog", "move_aliases", "swap_aliases",
]

log = get_logger(__name__)

EXPERIMENT = "coding-framework-rollouts"
_ARM_METRICS = ("requests", "errors", "error_rate", "graded", "passed", "pass_rate", "probe_graded",
                "probe_pass_rate", "tokens")

Registered = tuple[str, int, str | None]  # (registered model name, version, tracking uri)


def _artifact_location(uri: str) -> str | None:
    """Beside a SQLite store (MLflow's own default would be ./mlruns in whatever the working directory is)."""
    if not uri.startswith("sqlite:///"):
        return None
    return (Path(uri.removeprefix("sqlite:///")).parent / "rollout-artifacts").resolve().as_uri()


def _client(uri: str | None) -> MlflowClient:
    return mlflow_client(uri or fallback_tracking_uri())


def move_aliases(candidate: Registered, old_champion: Registered | None) -> dict[str, int]:
    """Point ``champion`` at the candidate and ``previous`` at the old champion; returns the new aliases.

    ``previous`` is the old champion when it is a version of the same registered model, else the version
    the ``champion`` alias held before (if any).
    """
    from mlflow.exceptions import MlflowException

    name, version, uri = candidate
    client = _client(uri)
    try:
        before: int | None = int(client.get_model_version_by_alias(name, CHAMPION_ALIAS).version)
    except MlflowException:
        before = None
    if old_champion is not None and old_champion[0] == name:
        before = old_champion[1]
    client.set_registered_model_alias(name, CHAMPION_ALIAS, str(version))
    moved = {CHAMPION_ALIAS: version}
    if before is not None and before != version:
        client.set_registered_model_alias(name, PREVIOUS_ALIAS, str(before))
        moved[PREVIOUS_ALIAS] = before
    log.info("registry_aliases_moved", model=name, **moved)
    return moved


def swap_aliases(champion: Registered, old_champion: Registered | None) -> None:
    """A rollback: ``champion`` to the version ``previous`` named, ``previous`` to the old champion (so a
    second rollback swaps back). A registry failure is logged; serving has switched already."""
    from mlflow.exceptions import MlflowException

    name, version, uri = champion
    try:
        client = _client(uri)
        client.set_registered_model_alias(name, CHAMPION_ALIAS, str(version))
        if old_champion is not None and old_champion[0] == name:
            client.set_registered_model_alias(name, PREVIOUS_ALIAS, str(old_champion[1]))
        else:
            client.delete_registered_model_alias(name, PREVIOUS_ALIAS)
    except MlflowException as exc:
        log.warning("rollout_mlflow_failed", error=str(exc)[:300])
        return
    log.info("registry_aliases_swapped", model=name, champion=version,
             previous=old_champion[1] if old_champion else None)


class RolloutLog:
    """MLflow runs of rollouts (``tracking_uri`` None: the candidate's registry, else
    `fallback_tracking_uri`)."""

    def __init__(self, tracking_uri: str | None) -> None:
        self._uri = tracking_uri
        self._clients: dict[str, MlflowClient] = {}
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rollout-log")

    def open(self, params: dict[str, Any], registry: Registered | None) -> str | None:
        """Create the rollout's run (blocking: call it off the event loop); None when MLflow fails."""
        try:
            client = _client(self._uri or (registry[2] if registry else None))
            experiment = client.get_experiment_by_name(EXPERIMENT)
            exp_id = experiment.experiment_id if experiment else client.create_experiment(
                EXPERIMENT, artifact_location=_artifact_location(client.tracking_uri))
            run_id: str = client.create_run(exp_id, run_name=params["rollout_id"]).info.run_id
            from mlflow.entities import Param

            client.log_batch(run_id, params=[Param(k, v) for k, v in flatten(params).items()])
        except Exception as exc:  # tracking must never break serving
            log.warning("rollout_mlflow_failed", error=str(exc))
            return None
        self._clients[run_id] = client
        return run_id

    def attach(self, run_id: str, registry: Registered | None) -> None:
        """Log to a run opened by an earlier process (a rollout resumed after a restart)."""
        self._clients[run_id] = _client(self._uri or (registry[2] if registry else None))

    def decision(
        self, run_id: str, index: int, decision: dict[str, Any], candidate: str, champion: str
    ) -> None:
        roles = {candidate: "candidate", champion: "champion"}

        def job(client: MlflowClient) -> None:
            from mlflow.entities import Metric

            now = int(decision["at"] * 1000)
            metrics = [Metric(metric_key(f"{roles[v]}.{k}"), float(arm[k]), now, index)
                       for v, arm in decision["arms"].items() for k in _ARM_METRICS if arm[k] is not None]
            metrics += [Metric(f"weight.{roles[v]}", float(w), now, index)
                        for v, w in decision["weights"].items()]
            client.log_batch(run_id, metrics=metrics)
            text = f"{decision['action']}: {decision['reason']}"
            client.set_tag(run_id, f"decision.{index:03d}", text[:5000])

        self._submit(run_id, job)

    def finish(self, run_id: str, status: dict[str, Any]) -> None:
        def job(client: MlflowClient) -> None:
            client.log_dict(run_id, status["decisions"], "decisions.json")
            client.log_dict(run_id, status, "status.json")
            client.set_tag(run_id, "rollout.status", status["status"])
            client.set_tag(run_id, "rollout.reason", status["reason"][:5000])
            client.set_terminated(run_id, "FINISHED")

        self._submit(run_id, job)

    def promote(self, candidate: Registered | None, old_champion: Registered | None) -> None:
        if candidate is not None:
            self._worker.submit(self._guarded, lambda: move_aliases(candidate, old_champion))

    def close(self) -> None:
        """Wait for the queued writes (blocking)."""
        self._worker.shutdown(wait=True)

    def _submit(self, run_id: str, job: Callable[[MlflowClient], None]) -> None:
        client = self._clients[run_id]
        self._worker.submit(self._guarded, lambda: job(client))

    @staticmethod
    def _guarded(job: Callable[[], Any]) -> None:
        try:
            job()
        except Exception as exc:  # tracking must never break serving
            log.warning("rollout_mlflow_failed", error=str(exc))
