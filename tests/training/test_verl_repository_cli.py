"""`verl-train` on repository tasks: the data flags, and a dry run validated against verl's own config."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from typer.testing import CliRunner

from coding_framework.cli import app
from coding_framework.cli.verl_train import _data_overrides
from coding_framework.config import load_config
from coding_framework.config.repository import RepositoryConfig
from coding_framework.config.shipped import shipped_config
from coding_framework.embedded import ensure_embedded_model
from coding_framework.repotasks.minirepo import write_minirepos
from coding_framework.testing.repository import calc_task
from coding_framework.training.verl.repository import REPOSITORY_AGENT_NAME, repo_task_from_row


def test_repository_benchmarks_in_the_data_flags_make_a_repository_run() -> None:
    assert _data_overrides(["minirepo:train"], None) == {"data.repository.train": ["minirepo:train"],
                                                         "data.repository.heldout": None}
    assert _data_overrides(None, "minirepo:validation") == {"data.repository.train": None,
                                                             "data.repository.heldout": "minirepo:validation"}
    assert _data_overrides(["humaneval"], "mbpp:test") == {"data.train": ["humaneval"],
                                                           "data.heldout": "mbpp:test"}
    assert _data_overrides(None, None) == {"data.train": None, "data.heldout": None}
    with pytest.raises(ValueError, match="mixes repository benchmarks and problem sources"):
        _data_overrides(["minirepo:train", "humaneval"], None)


def test_mixed_training_sources_are_a_one_line_error(tmp_path: Path) -> None:
    argv = ["verl-train", "--dry-run", "--config", "verl_cpu", "--run-dir", str(tmp_path / "run"),
            "--train-data", "minirepo:train", "--train-data", "humaneval"]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2 and "Traceback" not in result.stderr
    assert "mixes repository benchmarks and problem sources" in result.stderr


@pytest.mark.slow  # imports verl and hydra, and runs verl's checks over the parquet files (~30 s here)
def test_a_repository_dry_run_names_the_repository_loop_and_longer_conversations(tmp_path: Path) -> None:
    tasks = [calc_task().model_copy(update={"instance_id": f"calc_{i}"}) for i in range(3)]
    sets = tmp_path / "calc.jsonl.gz"
    write_minirepos({"train": tasks[:2], "validation": tasks[2:]}, sets)
    config = yaml.safe_load(shipped_config("verl_cpu_repo").read_text())
    config["data"]["repository"]["minirepo_file"] = str(sets)
    path = tmp_path / "verl_cpu_repo.yaml"
    path.write_text(yaml.safe_dump(config))
    run = tmp_path / "run"
    argv = ["verl-train", "--dry-run", "--config", str(path), "--run-dir", str(run),
            "--model", str(ensure_embedded_model(progress=False))]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["validated"] and (out["train_prompts"], out["val_prompts"]) == (2, 1)
    args = set(out["command"])
    assert f"actor_rollout_ref.rollout.agent.default_agent_loop={REPOSITORY_AGENT_NAME}" in args
    assert {"data.max_prompt_length=1024", "data.max_response_length=1024"} <= args
    loops = yaml.safe_load((run / "workflow" / "agent_loops.yaml").read_text())
    assert {"name": REPOSITORY_AGENT_NAME,
            "_target_": "coding_framework.training.verl.repository.RepositoryAgentLoop"} in loops
    assert f"+coding_framework.repository={run / 'workflow' / 'repository.yaml'}" in args
    repo = load_config(RepositoryConfig, run / "workflow" / "repository.yaml")
    assert (repo.max_turns, repo.sampling.max_new_tokens, repo.sampling.temperature) == (6, 96, 1.0)
    rows = pd.read_parquet(out["train_file"])
    assert [repo_task_from_row(r) for r in rows.to_dict("records")] == tasks[:2]
    assert set(rows["agent_name"]) == {REPOSITORY_AGENT_NAME}
    # an explicit length wins over the repository default
    result = CliRunner().invoke(app, [*argv[:-4], "--run-dir", str(tmp_path / "run2"), "--response-length",
                                      "768", *argv[-2:]])
    assert result.exit_code == 0, result.stderr
    assert "data.max_response_length=768" in json.loads(result.stdout.strip().splitlines()[-1])["command"]
