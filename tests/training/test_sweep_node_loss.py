"""A sweep survives losing a Ray node: on a head and two worker nodes (one machine), two trials of a tiny
run start one per worker; once one has reported a checkpoint its node is killed, Tune restarts the trial
on the surviving node from that checkpoint (through the trainer's resume), and the sweep completes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from mlflow.tracking import MlflowClient

from coding_framework.config.sweep import load_sweep
from coding_framework.testing.ray_cluster import SWEEP_NODE, KillNodeAfterCheckpoint, ray_cluster
from coding_framework.testing.tiny_run import tiny_config
from coding_framework.training.sweep import run_sweep

STEPS = 4


@pytest.mark.slow
def test_a_trial_on_a_lost_node_resumes_from_its_checkpoint_on_another(tmp_path: Path) -> None:
    tiny_config(
        tmp_path,
        steps=STEPS,
        checkpoint={"every": 1, "keep_last": 2},
        eval={"max_new_tokens": 12, "baseline": False},
        audit={"every": 0},
        tracking={"registered_model": None, "log_checkpoints": False},
    )
    sweep = {
        "base": "tiny.yaml",
        "search_space": {"rollout.temperature": {"type": "grid", "values": [1.0, 0.8]}},
        "metric": "charts/temperature",
        "mode": "max",
        "num_samples": 1,
        "asha": {"enabled": False},
        "max_concurrent_trials": 2,
        "trial_resources": {SWEEP_NODE: 1},
        "max_failures": 2,
    }
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(sweep))
    config, base = load_sweep(tmp_path / "sweep.yaml")
    with ray_cluster(workers=2) as cluster:
        killer = KillNodeAfterCheckpoint(cluster, after_step=1)
        results = run_sweep(config, base, tmp_path / "d", progress=False, callbacks=[killer])
        assert len(cluster.worker_nodes) == 1

    assert len(killer.killed) == 1
    killed = killer.killed[0]
    trials = {t["trial_id"]: t for t in results.trials}
    assert all(t["status"] == "completed" and t["steps"] == STEPS for t in trials.values())
    moved = trials[killed["trial_id"]]
    assert moved["failures"] == 1 and moved["nodes"][0] == killed["node_id"]
    assert len(moved["nodes"]) == 2 and moved["nodes"][1] != killed["node_id"]
    # Resumed from the checkpoint reported with the step the kill followed (or a later one): no step
    # trained twice made it into the reported curve, and none is missing.
    assert killed["checkpoint_step"] == killed["step"] >= 1
    assert moved["resumed_from"] is not None and moved["resumed_from"] >= killed["step"]
    assert [step for step, _ in moved["curve"]] == list(range(1, STEPS + 1))
    other = next(t for t in trials.values() if t is not moved)
    assert other["failures"] == 0 and other["resumed_from"] is None and len(other["nodes"]) == 1
    assert results.best is not None and results.best["params"] == {"rollout.temperature": 1.0}
    assert results.summary()["best_metric"] == 1.0
    assert (Path(moved["run_dir"]) / "results.json").is_file()
    # The trainer's resume continued the trial's MLflow run: the parent and one run per trial, no more.
    client = MlflowClient(tracking_uri=results.mlflow_uri)
    experiment = client.get_experiment_by_name(config.experiment)
    assert len(client.search_runs([experiment.experiment_id])) == 3
    assert client.get_run(moved["mlflow_run_id"]).info.status == "FINISHED"
