"""A whole run that trains the Reviewer too: warm start, reviewer rows with their own credit, and the review
usefulness rate in the step metrics, the held-out results and MLflow."""

from __future__ import annotations

import json

import mlflow
import pytest

from coding_framework.config import load_config
from coding_framework.config.training import TrainingConfig
from coding_framework.testing.tiny_run import tiny_config
from coding_framework.training import Trainer

REVIEWING = {
    "steps": 2,
    "workflow": {
        "graph": {"max_rounds": 2, "review": "on_failure"},
        "agents": {"reviewer": {"backend": "llm", "sampling": {"max_new_tokens": 8}}},
    },
    "rollout": {"problems_per_step": 2, "group_size": 2, "max_new_tokens": 12,
                "trained_roles": ["generator", "reviewer"]},
    "eval": {"max_new_tokens": 12, "max_rounds": 2},
    "reviewer_warm_start": {"enabled": True, "problems": 2, "samples": 2, "max_new_tokens": 12, "epochs": 1},
    "audit": {"rows": 8},
}


@pytest.mark.slow
def test_a_run_that_trains_the_reviewer_reports_its_usefulness(tmp_path) -> None:
    config = load_config(TrainingConfig, tiny_config(tmp_path, **REVIEWING))
    results = Trainer(config, tmp_path / "run", progress=False).run()
    step = results.history[0].metrics
    assert step["review/judged"] > 0 and 0.0 <= step["review/usefulness_rate"] <= 1.0
    assert "heldout_review_usefulness" in results.final_metrics
    assert results.audit["offending_tokens"] == 0
    run_id = json.loads((tmp_path / "run" / "tracking.json").read_text())["mlflow_run_id"]
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path / 'run' / 'mlflow.db'}")
    logged = client.get_run(run_id).data.metrics
    assert logged["warm_start/reviews"] == 4.0  # 2 problems x 2 samples, every first draft of noise fails
    assert "review/usefulness_rate" in logged and "heldout_review_usefulness" in logged
