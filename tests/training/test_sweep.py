"""Sweeps: the config and its search space (fast), and one real sweep through the CLI (slow): Ray Tune runs
4 trials of the trainer on a tiny model, ASHA stops 3, and MLflow holds the parent run and the 4 trials.

The slow sweep is made deterministic: grid trials run one at a time in grid order, and the metric is the
sampling temperature the trainer reports (``charts/temperature``), lower in each later trial, so ASHA's
first rung stops every trial after the first.
"""

from __future__ import annotations

import json
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import ray
import yaml
from pydantic import ValidationError
from ray import tune
from typer.testing import CliRunner

from coding_framework.cli.main import app
from coding_framework.config import ConfigError, SweepConfig
from coding_framework.config.sweep import apply_dotted, check_training_key, load_sweep
from coding_framework.testing.tiny_run import tiny_config
from coding_framework.training.run.checkpoint import CheckpointManager
from coding_framework.training.sweep import trial_count, tune_space
from coding_framework.training.sweep.plot import plot_sweep
from coding_framework.training.sweep.progress import SweepProgress
from coding_framework.training.sweep.run import _failure_config
from coding_framework.training.sweep.trial import _restore

TEMPERATURES = [1.0, 0.8, 0.6, 0.4]
TEMPERATURE_GRID = {"rollout.temperature": {"type": "grid", "values": TEMPERATURES}}


def _space(**dims: dict[str, Any]) -> dict[str, Any]:
    return {key.replace("__", "."): dim for key, dim in dims.items()}


# -- the config ------------------------------------------------------------------------------------------


def test_the_shipped_sweep_loads_with_its_base_and_makes_4_trials() -> None:
    sweep, base = load_sweep("sweep_basic")
    assert sweep.num_samples == 4 and trial_count(sweep) == 4 and sweep.asha.enabled
    assert base["steps"] == 4 and base["rollout"]["problems_per_step"] == 4  # the overrides, applied
    assert base["algorithm"] == "grpo" and base["tracking"]["registered_model"] is None  # from quickstart


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("optim.lr", None),
        ("algo.overrides.clip_ratio_high", None),
        ("curriculum.start.easy", None),  # into a mapping field: the value is checked when applied
        ("workflow.graph.max_rounds", None),
        ("optim.lrr", "optim has no field 'lrr'"),
        ("steps.every", "steps is a value, not a section"),
        ("nope", "TrainingConfig has no field 'nope'"),
    ],
)
def test_keys_are_checked_against_the_training_config(key: str, problem: str | None) -> None:
    found = check_training_key(key)
    assert found is None if problem is None else (found is not None and problem in found)


@pytest.mark.parametrize(
    ("dim", "message"),
    [
        ({"type": "choice", "values": []}, "at least 1 item"),
        ({"type": "uniform", "low": 2.0, "high": 2.0}, "low (2.0) must be below high (2.0)"),
        ({"type": "loguniform", "low": -1.0, "high": 1.0}, "greater than 0"),
        ({"type": "grid", "values": [1], "low": 0}, "Extra inputs are not permitted"),
    ],
)
def test_bad_dimensions_are_rejected(dim: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        SweepConfig(search_space={"optim.lr": dim})


def test_values_are_checked_against_the_base_before_any_trial(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep.yaml"
    space = _space(rollout__group_size={"type": "choice", "values": [2, "many"]})
    sweep.write_text(yaml.safe_dump({"search_space": space}))
    with pytest.raises(ConfigError, match=r"search_space.rollout.group_size = 'many': rollout.group_size"):
        load_sweep(sweep)


def test_a_relative_base_is_found_beside_the_sweep_and_its_model_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "base.yaml").write_text(yaml.safe_dump({"model": "models/m", "steps": 3}))
    (tmp_path / "cfg" / "sweep.yaml").write_text(
        yaml.safe_dump({"base": "base.yaml", "search_space": _space(seed={"type": "grid", "values": [1]})})
    )
    monkeypatch.chdir(tmp_path)
    _, base = load_sweep("cfg/sweep.yaml")
    assert base["steps"] == 3 and base["model"] == str(tmp_path / "models" / "m")


def test_apply_dotted_copies_and_creates_sections() -> None:
    data = {"optim": {"lr": 1.0}}
    out = apply_dotted(data, {"optim.lr": 2.0, "kl.coef": 0.5})
    assert out == {"optim": {"lr": 2.0}, "kl": {"coef": 0.5}} and data == {"optim": {"lr": 1.0}}


def test_the_search_space_maps_to_tune_domains() -> None:
    sweep = SweepConfig(
        num_samples=2,
        search_space=_space(
            optim__lr={"type": "loguniform", "low": 1e-5, "high": 1e-3},
            rollout__temperature={"type": "uniform", "low": 0.5, "high": 1.0},
            seed={"type": "grid", "values": [0, 1, 2]},
            algorithm={"type": "choice", "values": ["grpo", "rloo"]},
        ),
    )
    space = tune_space(sweep)
    assert space["seed"] == tune.grid_search([0, 1, 2])
    assert set(space["algorithm"].categories) == {"grpo", "rloo"}
    lrs = space["optim.lr"].sample(size=200)
    temperatures = space["rollout.temperature"].sample(size=200)
    assert all(1e-5 <= v <= 1e-3 for v in lrs) and sum(v < 1e-4 for v in lrs) > 50  # log scale: half below
    assert all(0.5 <= v <= 1.0 for v in temperatures)
    assert trial_count(sweep) == 6


def test_the_progress_callback_pickles_and_counts_early_stops() -> None:
    bar = SweepProgress(total=3, metric="reward_mean", mode="max", enabled=False)
    restored = pickle.loads(pickle.dumps(bar))  # Tune pickles its callbacks with the run config
    assert restored.metric == "reward_mean" and not hasattr(restored, "bar")
    for i, last in enumerate([{"step": 4, "finished": 1.0}, {"step": 1}]):
        trial = SimpleNamespace(trial_id=str(i), last_result=last)
        bar.on_trial_start(0, [], trial)
        bar.on_trial_result(0, [], trial, {"reward_mean": 0.5 - i})
        bar.on_trial_complete(0, [], trial)
    assert (bar.done, bar.stopped, bar.failed, bar.best, bar.running) == (2, 1, 0, 0.5, set())


def test_restarts_are_counted_per_trial() -> None:
    bar = SweepProgress(total=2, metric="reward_mean", mode="max", enabled=False)
    for trial_id in ("a", "a", "b"):
        bar.on_trial_recover(0, [], SimpleNamespace(trial_id=trial_id))
    assert bar.restarts == {"a": 2, "b": 1}


@pytest.mark.parametrize(("max_failures", "expected"), [(0, (0, True)), (2, (2, False))])
def test_max_failures_0_fails_fast_and_more_restart_trials(
    max_failures: int, expected: tuple[int, bool]
) -> None:
    config = _failure_config(SweepConfig(search_space=TEMPERATURE_GRID, max_failures=max_failures))
    assert (config.max_failures, config.fail_fast) == expected


def _write(step: int) -> Callable[[Path], None]:
    return lambda out: (out / "state.json").write_text(json.dumps({"step": step}))


def test_a_restart_puts_tunes_checkpoint_back_and_drops_newer_ones(tmp_path: Path) -> None:
    """As on a new node without the trial's files: Tune's copy of step 2 becomes the newest checkpoint."""
    manager = CheckpointManager(tmp_path / "run" / "checkpoints", keep_last=5)
    for step in (1, 2, 3):
        manager.save(step, _write(step))
    shutil.copytree(manager.path_for(2), tmp_path / "tune-storage")
    shutil.rmtree(manager.path_for(2))
    assert _restore(tune.Checkpoint.from_directory(tmp_path / "tune-storage"), manager) == 2
    assert manager.steps() == [1, 2] and manager.latest() is not None and manager.latest().step == 2


def test_a_restart_before_any_reported_checkpoint_starts_over(tmp_path: Path) -> None:
    manager = CheckpointManager(tmp_path / "checkpoints")
    manager.save(1, _write(1))  # saved, but the trial died before reporting it
    assert _restore(None, manager) == 0 and manager.steps() == []


def test_the_plot_draws_every_trial(tmp_path: Path) -> None:
    trials = [
        {"trial_id": "a", "params": {"optim.lr": 1e-4}, "status": "completed", "curve": [[1, 0.1], [2, 0.3]]},
        {"trial_id": "b", "params": {"optim.lr": 1e-3}, "status": "stopped_early", "curve": [[1, 0.0]]},
        {"trial_id": "c", "params": {"optim.lr": 1e-2}, "status": "error", "curve": []},
    ]
    path = plot_sweep(trials, trials[0], "reward_mean", tmp_path / "sweep.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000


# -- a real sweep -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sweep_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One sweep (one Ray session) for the module, through the real CLI in this process."""
    tmp = tmp_path_factory.mktemp("sweep")
    tiny_config(
        tmp,
        steps=2,
        eval={"max_new_tokens": 12, "baseline": False},
        audit={"every": 0},
        tracking={"registered_model": None, "log_checkpoints": False},
    )
    sweep = {
        "base": "tiny.yaml",  # beside the sweep file
        "search_space": {"rollout.temperature": {"type": "grid", "values": TEMPERATURES}},
        "metric": "charts/temperature",
        "mode": "max",
        "num_samples": 1,
        "max_concurrent_trials": 1,
        "asha": {"grace_period": 1, "reduction_factor": 2},
    }
    (tmp / "sweep.yaml").write_text(yaml.safe_dump(sweep))
    args = ["sweep", "--config", str(tmp / "sweep.yaml"), "--run-dir", str(tmp / "d")]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.stderr[-4000:]
    assert not ray.is_initialized()  # the sweep shut down the Ray cluster it started
    return {"dir": tmp / "d", "stdout": done.stdout, "stderr": done.stderr}


@pytest.mark.slow
def test_the_last_line_lists_the_trials_and_the_best(sweep_run: dict[str, Any]) -> None:
    lines = sweep_run["stdout"].strip().splitlines()
    assert len(lines) == 1  # Tune's banner went to stderr
    out = json.loads(lines[-1])
    assert out["trials"] == 4 and out["trials_completed"] == 1 and out["trials_stopped_early"] == 3
    assert out["best"] == {"rollout.temperature": 1.0} and out["best_metric"] == 1.0
    assert out["seconds"] > 0 and json.loads(Path(out["best_config_file"]).read_text())["rollout"][
        "temperature"
    ] == 1.0
    by_temperature = {t["params"]["rollout.temperature"]: t for t in out["per_trial"]}
    assert sorted(by_temperature) == sorted(TEMPERATURES)
    assert by_temperature[1.0]["status"] == "completed" and by_temperature[1.0]["steps"] == 2
    for temperature in TEMPERATURES[1:]:  # ASHA's first rung, one step in
        trial = by_temperature[temperature]
        assert (trial["status"], trial["steps"], trial["metric"]) == ("stopped_early", 1, temperature)
    assert "stopped early 3" in sweep_run["stderr"]
    curves = {t["params"]["rollout.temperature"]: t["curve"] for t in json.loads(
        (sweep_run["dir"] / "sweep.json").read_text())["trials"]}
    assert curves == {1.0: [[1, 1.0], [2, 1.0]], **{t: [[1, t]] for t in TEMPERATURES[1:]}}
    assert Path(out["plot"]).read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_each_trial_trains_in_its_own_run_dir(sweep_run: dict[str, Any]) -> None:
    out = json.loads(sweep_run["stdout"].strip().splitlines()[-1])
    for trial in out["per_trial"]:
        run_dir = Path(trial["run_dir"])
        assert run_dir.parent == sweep_run["dir"] / "trials"
        config = json.loads((run_dir / "config.json").read_text())
        assert config["rollout"]["temperature"] == trial["params"]["rollout.temperature"]
        assert config["tracking"]["mlflow_uri"] == f"sqlite:///{sweep_run['dir'] / 'mlflow.db'}"
        assert (run_dir / "results.json").is_file() == (trial["status"] == "completed")


@pytest.mark.slow
def test_mlflow_holds_the_parent_run_and_the_trials_nested_under_it(sweep_run: dict[str, Any]) -> None:
    from mlflow.tracking import MlflowClient

    out = json.loads(sweep_run["stdout"].strip().splitlines()[-1])
    client = MlflowClient(tracking_uri=out["mlflow_uri"])
    experiment = client.get_experiment_by_name("coding-framework-sweep")
    runs = client.search_runs([experiment.experiment_id])
    parent = next(r for r in runs if r.info.run_id == out["mlflow_run_id"])
    assert parent.info.status == "FINISHED" and parent.data.tags["sweep.role"] == "parent"
    assert json.loads(parent.data.params["search_space.rollout.temperature"])["values"] == TEMPERATURES
    assert parent.data.params["best.rollout.temperature"] == "1.0"
    assert parent.data.metrics["trials"] == 4 and parent.data.metrics["trials_stopped_early"] == 3
    assert parent.data.metrics["best_charts/temperature"] == 1.0
    table = json.loads(Path(client.download_artifacts(parent.info.run_id, "trials.json")).read_text())
    assert len(table["trials"]) == 4
    assert {a.path for a in client.list_artifacts(parent.info.run_id)} == {"trials.json", "sweep.png"}
    trials = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert sorted(r.info.run_id for r in trials) == sorted(t["mlflow_run_id"] for t in out["per_trial"])
    for run in trials:
        stopped = run.data.tags["sweep.status"] == "stopped_early"
        assert run.info.status == ("KILLED" if stopped else "FINISHED")
        assert float(run.data.params["rollout.temperature"]) == run.data.metrics["charts/temperature"]
