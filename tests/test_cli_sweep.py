"""`sweep`: bad input is one line and exit 2, before Ray starts (a real sweep: training/test_sweep.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import ray
import yaml
from typer.testing import CliRunner

from coding_framework.cli.main import app
from coding_framework.testing.tiny_run import tiny_config

TEMPERATURE = {"rollout.temperature": {"type": "choice", "values": [0.5, 1.0]}}


def _sweep(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(text)
    return path


def _invoke(tmp_path: Path, config: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["sweep", "--config", str(config), "--run-dir", str(tmp_path / "d")])
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("space", "message"),
    [
        ({"optim.lrr": {"type": "choice", "values": [0.1]}}, "key 'optim.lrr': optim has no field 'lrr'"),
        ({"stepz": {"type": "grid", "values": [1]}}, "TrainingConfig has no field 'stepz'"),
        ({"steps.n": {"type": "grid", "values": [1]}}, "steps is a value, not a section"),
        ({"optim.lr": {"type": "normal", "values": [1]}}, "does not match any of the expected tags"),
        ({"optim.lr": {"type": "loguniform", "low": 0.0, "high": 1.0}}, "greater than 0"),
        ({"optim.lr": {"type": "uniform", "low": 1.0, "high": 0.5}}, "low (1.0) must be below high (0.5)"),
    ],
)
def test_a_bad_search_space_is_one_line_and_exit_2(tmp_path: Path, space: dict, message: str) -> None:
    code, output = _invoke(tmp_path, _sweep(tmp_path, yaml.safe_dump({"search_space": space})))
    assert code == 2, output
    assert message in output and "Traceback" not in output
    assert output.startswith("error: ") and output.count("\n") == 1
    assert not (tmp_path / "d").exists()


def test_a_value_the_base_config_rejects_names_the_key_and_value(tmp_path: Path) -> None:
    space = {"rollout.temperature": {"type": "grid", "values": [0.5, -1.0]}}
    code, output = _invoke(tmp_path, _sweep(tmp_path, yaml.safe_dump({"search_space": space})))
    assert code == 2, output
    assert "search_space.rollout.temperature = -1.0: rollout.temperature: Input should be greater" in output
    assert output.count("\n") == 1 and not (tmp_path / "d").exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "config file not found: "),
        ("search_space: [", "is not valid YAML"),
        ("metric: reward_mean\n", "search_space: Field required"),
        (yaml.safe_dump({"search_space": TEMPERATURE, "base": "nope.yaml"}), "file not found: nope.yaml"),
        (yaml.safe_dump({"search_space": TEMPERATURE, "overrides": {"steps": 0}}), "overrides: steps: Input"),
        (yaml.safe_dump({"search_space": TEMPERATURE, "cpus_per_trial": 4}), "exceeds ray_cpus (2)"),
    ],
)
def test_a_bad_sweep_file_is_one_line_and_exit_2(tmp_path: Path, text: str | None, message: str) -> None:
    config = tmp_path / "missing.yaml" if text is None else _sweep(tmp_path, text)
    code, output = _invoke(tmp_path, config)
    assert code == 2, output
    assert message in output and "Traceback" not in output and output.count("\n") == 1


@pytest.mark.slow
def test_a_metric_the_trainer_does_not_report_stops_the_sweep_with_exit_2(tmp_path: Path) -> None:
    """Found by the first trial at its first step (its own Ray session; with max_failures 0 Tune fails fast
    instead of restarting the trial)."""
    tiny_config(tmp_path, steps=1, eval={"baseline": False}, audit={"every": 0},
                tracking={"registered_model": None, "log_checkpoints": False})
    space = {"rollout.temperature": {"type": "grid", "values": [1.0]}}
    sweep = {"base": "tiny.yaml", "search_space": space, "metric": "rewrd", "max_failures": 0}
    code, output = _invoke(tmp_path, _sweep(tmp_path, yaml.safe_dump(sweep)))
    assert code == 2, output
    assert "error: metric 'rewrd' is not a metric the trainer reports; it reports: [" in output
    assert "'reward_mean'" in output and "Traceback" not in output
    assert not ray.is_initialized()


def test_sweep_is_a_command() -> None:
    result = CliRunner().invoke(app, ["sweep", "--help"])
    assert result.exit_code == 0 and "--run-dir" in result.output and "--config" in result.output
    assert "--ray-address" in result.output
