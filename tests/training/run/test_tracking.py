"""A finished run's MLflow store: params, per-step metrics, checkpoint and report artifacts, the registered
model (loadable as a pyfunc); and the report files themselves."""

from __future__ import annotations

import pytest

from coding_framework.config.loader import load_config
from coding_framework.config.training import TrainingConfig
from coding_framework.models.checksums import weights_checksum
from coding_framework.models.mlflow_fields import flatten, metric_key
from coding_framework.testing.tiny_run import tiny_config
from coding_framework.training.run.results import TrainingResults
from coding_framework.training.trainer import Trainer

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> TrainingResults:
    tmp = tmp_path_factory.mktemp("tracked")
    # a checkpoint every step, two kept: the store must prune step 1 as the run directory does
    config = load_config(TrainingConfig, tiny_config(tmp, steps=3, checkpoint={"every": 1, "keep_last": 2}))
    return Trainer(config, tmp / "run", progress=False).run()


@pytest.fixture(scope="module")
def client(finished: TrainingResults):
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{finished.run_dir.resolve() / 'mlflow.db'}"
    return MlflowClient(tracking_uri=uri, registry_uri=uri)


def test_run_holds_params_and_per_step_metrics(finished: TrainingResults, client) -> None:
    run = client.get_run(finished.mlflow_run_id)
    assert run.info.status == "FINISHED"
    assert run.data.params["algorithm"] == "grpo"
    assert run.data.params["rollout.group_size"] == "2"
    assert [m.step for m in client.get_metric_history(run.info.run_id, "reward_mean")] == [1, 2, 3]
    assert [m.step for m in client.get_metric_history(run.info.run_id, "heldout_pass_at_1")] == [0, 3]
    keys = ("reward_std", "pass_rate", "kl/ref", "losses/entropy", "losses/clipfrac", "charts/tokens_per_s",
            "seconds/rollout", "seconds/update", "audit/offending_tokens")
    for key in keys:
        assert key in run.data.metrics, key
    assert run.data.metrics["losses/entropy"] > 0


def test_checkpoints_report_and_model_are_artifacts(finished: TrainingResults, client) -> None:
    run_id = finished.mlflow_run_id
    top = {a.path for a in client.list_artifacts(run_id)}
    assert {"checkpoints", "report"} <= top
    checkpoints = {a.path for a in client.list_artifacts(run_id, "checkpoints")}
    assert checkpoints == {"checkpoints/step-000002", "checkpoints/step-000003"}
    kept = sorted(p.name for p in (finished.run_dir / "checkpoints").iterdir())
    assert kept == ["step-000002", "step-000003"]
    stored = {a.path for a in client.list_artifacts(run_id, "checkpoints/step-000003")}
    assert "checkpoints/step-000003/manifest.json" in stored
    report = {a.path for a in client.list_artifacts(run_id, "report")}
    assert report == {"report/report.html", "report/report.png"}


def test_final_model_is_registered_and_loads_as_pyfunc(finished: TrainingResults, client) -> None:
    import mlflow.pyfunc

    assert finished.registered_model["registered_model"] == "coding-framework-generator"
    number = str(finished.registered_model["registered_version"])
    version = client.get_model_version("coding-framework-generator", number)
    assert version.run_id == finished.mlflow_run_id
    challenger = client.get_model_version_by_alias("coding-framework-generator", "challenger")
    assert str(challenger.version) == number
    assert version.tags["weights_sha256"] == weights_checksum(finished.final_model_dir)
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(client.tracking_uri)
    try:
        model = mlflow.pyfunc.load_model(finished.registered_model["model_uri"])
        task = "Write a function add(a, b) that returns a + b."
        answers = model.predict([task], params={"max_new_tokens": 8})
    finally:
        mlflow.set_tracking_uri(previous)
    assert len(answers) == 1 and isinstance(answers[0], str)


def test_report_files_plot_the_curves(finished: TrainingResults) -> None:
    png, page = finished.report["png"], finished.report["html"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    html = page.read_text()
    assert 'src="report.png"' in html and "reward_mean" in html and "heldout_pass@1" in html
    assert html.count("<tr><td>") == 4  # the baseline (step 0) and one row per step


def test_metric_names_and_params_are_mlflow_safe() -> None:
    assert metric_key("heldout_pass@1") == "heldout_pass_at_1"
    assert metric_key("losses/clip frac:1") == "losses/clip frac:1"
    assert flatten({"a": {"b": 1, "c": [1, 2]}, "d": "x"}) == {"a.b": "1", "a.c": "[1, 2]", "d": "x"}
