"""Whole runs on user data: the default synthetic problems exported to JSONL train to the same metrics, bit
for bit; a run made to regress is registered without `challenger`, and says so on stderr and in its last
line; slices evaluated while training are logged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import mlflow
import pytest
import yaml

from coding_framework.config import load_config
from coding_framework.config.training import TrainingConfig
from coding_framework.problems import write_problem_records
from coding_framework.testing.tiny_run import comparable, tiny_config
from coding_framework.training import Trainer
from coding_framework.training.run.data import prepare_data

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_the_default_problems_from_files_train_bit_for_bit_alike(tmp_path: Path) -> None:
    config = load_config(TrainingConfig, tiny_config(tmp_path, steps=2))
    sets = prepare_data(config)
    train = write_problem_records(sets.train, tmp_path / "train.jsonl")
    heldout = write_problem_records(sets.heldout, tmp_path / "heldout.jsonl")
    from_files = config.model_copy(update={"data": config.data.model_copy(
        update={"train": [{"source": str(train)}], "heldout": str(heldout)})})
    from_files = TrainingConfig.model_validate(from_files.model_dump())
    default = Trainer(config, tmp_path / "default", progress=False).run()
    files = Trainer(from_files, tmp_path / "files", progress=False).run()
    assert comparable([r.model_dump() for r in files.history]) == comparable(
        [r.model_dump() for r in default.history])
    assert files.heldout_pass_at_1 == default.heldout_pass_at_1
    assert files.data_sha256 == default.data_sha256


@pytest.mark.slow
def test_a_run_that_regresses_is_not_the_challenger(tmp_path: Path) -> None:
    """The quickstart's model and held-out set, but one step at a destructive learning rate: the trained
    model passes nothing, and the gate keeps it from the `challenger` alias."""
    from coding_framework.config import shipped_config

    config = yaml.safe_load(shipped_config("quickstart").read_text())
    config.update(steps=1, gate={"max_drop": 0.01, "benchmarks": ["builtin"]},
                  optim={**config["optim"], "lr": 1.0, "eps": 1e-8})
    config["data"]["heldout_limit"] = 60
    config["eval"]["benchmarks"] = [{"source": "builtin", "limit": 4}]
    config["rollout"].update(problems_per_step=4, group_size=4)
    path = tmp_path / "regress.yaml"
    path.write_text(yaml.safe_dump(config))
    done = subprocess.run(
        [sys.executable, "-m", "coding_framework.cli", "train", "--config", str(path), "--run-dir",
         str(tmp_path / "run"), "--no-progress"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=1200,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    last = json.loads(done.stdout.strip().splitlines()[-1])
    assert last["challenger"] is False and last["gate"]["passed"] is False
    assert last["gate"]["before"]["heldout"] > last["gate"]["after"]["heldout"]
    assert "gate: the final model is registered without the 'challenger' alias" in done.stderr
    uri = f"sqlite:///{(tmp_path / 'run' / 'mlflow.db').resolve()}"
    client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)
    version = client.get_model_version("coding-framework-generator", "1")
    assert version.aliases == [] and version.tags["gate.passed"] == "false"
    assert version.tags["data_sha256"] == last["data_sha256"]
    history = json.loads((tmp_path / "run" / "results.json").read_text())["final_metrics"]
    assert "eval/builtin/pass@1" in history
