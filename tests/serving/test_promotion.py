"""Promotion moves registry aliases; every rollout leaves an MLflow run (real SQLite store)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from coding_framework.config.rollout import RolloutPolicy
from coding_framework.serving.rollouts.manager import RolloutManager
from coding_framework.serving.rollouts.promotion import EXPERIMENT, move_aliases
from coding_framework.testing.rollouts import RecordingHooks, Traffic

pytestmark = pytest.mark.slow  # MLflow creates its SQLite schema (a few seconds)

NAME = "coding-framework-generator"
CHAMP, CAND = "champ@0000", "cand@0000"


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, MlflowClient]:
    uri = f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    client.create_registered_model(NAME)
    for _ in range(4):
        client.create_model_version(NAME, source="file:///nowhere")
    return uri, client


def _alias(client: MlflowClient, alias: str) -> int:
    return int(client.get_model_version_by_alias(NAME, alias).version)


def test_move_aliases_keeps_the_previous_champion(registry: tuple[str, MlflowClient]) -> None:
    uri, client = registry
    client.set_registered_model_alias(NAME, "champion", "1")
    assert move_aliases((NAME, 2, uri), None) == {"champion": 2, "previous": 1}
    assert move_aliases((NAME, 3, uri), (NAME, 2, uri)) == {"champion": 3, "previous": 2}
    assert (_alias(client, "champion"), _alias(client, "previous")) == (3, 2)


async def _rollout(uri: str, hooks: RecordingHooks, pass_rates: dict[str, float]) -> dict:
    policy = RolloutPolicy(margin=0.3, min_graded=20, drain_s=0, steps=[20, 100])
    manager = RolloutManager(CHAMP, policy, hooks, tracking_uri=uri)
    started = await manager.start("cand", "canary", None)
    final = Traffic(manager, pass_rates).run_until_done(started["id"], 5000)
    await manager.aclose()  # flushes the MLflow writes
    return final


async def test_a_promoted_rollout_moves_aliases_and_is_logged(registry: tuple[str, MlflowClient],
                                                               tmp_path: Path) -> None:
    uri, client = registry
    client.set_registered_model_alias(NAME, "champion", "3")
    hooks = RecordingHooks(registry={CAND: (NAME, 4, uri), CHAMP: (NAME, 3, uri)})
    final = await _rollout(uri, hooks, {CHAMP: 0.6, CAND: 0.65})
    assert final["status"] == "promoted"
    assert (_alias(client, "champion"), _alias(client, "previous")) == (4, 3)

    run = client.get_run(final["mlflow_run_id"])
    assert run.info.status == "FINISHED"
    assert client.get_experiment(run.info.experiment_id).name == EXPERIMENT
    assert run.data.params["strategy"] == "canary" and run.data.params["candidate"] == CAND
    assert run.data.tags["rollout.status"] == "promoted"
    assert run.data.tags["decision.002"].startswith("promote: non-inferior")
    history = client.get_metric_history(run.info.run_id, "candidate.graded")
    assert [m.step for m in history] == [0, 1, 2]
    path = client.download_artifacts(run.info.run_id, "decisions.json", str(tmp_path))
    assert [d["action"] for d in json.loads(Path(path).read_text())] == ["start", "advance", "promote"]


async def test_a_rolled_back_rollout_leaves_aliases_alone_and_is_logged(
    registry: tuple[str, MlflowClient],
) -> None:
    uri, client = registry
    client.set_registered_model_alias(NAME, "champion", "3")
    client.set_registered_model_alias(NAME, "previous", "2")
    hooks = RecordingHooks(registry={CAND: (NAME, 4, uri), CHAMP: (NAME, 3, uri)})
    final = await _rollout(uri, hooks, {CHAMP: 0.6, CAND: 0.0})
    assert final["status"] == "rolled_back"
    assert (_alias(client, "champion"), _alias(client, "previous")) == (3, 2)
    run = client.get_run(final["mlflow_run_id"])
    assert run.data.tags["rollout.status"] == "rolled_back"
    assert "pass-rate drop" in run.data.tags["rollout.reason"]


async def test_an_unreachable_tracking_store_never_breaks_the_rollout(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    final = await _rollout(f"sqlite:///{blocked}/sub/mlflow.db", RecordingHooks(), {CHAMP: 0.6, CAND: 0.6})
    assert final["status"] == "promoted" and final["mlflow_run_id"] is None
