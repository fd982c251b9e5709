"""`train` and `quickstart`: the last stdout line is JSON, and bad input is a clear error (no traceback)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from coding_framework.cli.main import app
from coding_framework.testing.tiny_run import tiny_config

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "coding_framework.cli", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
def test_train_prints_the_final_metrics_as_the_last_line(tmp_path: Path) -> None:
    done = _run(
        "train",
        "--algorithm",
        "rloo",
        "--config",
        str(tiny_config(tmp_path)),
        "--run-dir",
        str(tmp_path / "run"),
        "--steps",
        "2",
        "--seed",
        "4",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    last = json.loads(done.stdout.strip().splitlines()[-1])
    assert last["step"] == 2 and last["algorithm"] == "rloo" and last["seed"] == 4
    assert isinstance(last["reward_mean"], float) and 0.0 <= last["heldout_pass@1"] <= 1.0
    assert (tmp_path / "run" / "results.json").is_file() and (tmp_path / "run" / "final_model").is_dir()


@pytest.mark.slow
def test_quickstart_prints_before_after_and_the_summary_line(tmp_path: Path) -> None:
    config = tiny_config(tmp_path, steps=1, eval={"max_new_tokens": 12, "temperature": 1.0, "samples": 2})
    done = _run("quickstart", "--config", str(config), "--run-dir", str(tmp_path / "qs"), "--no-progress",
                "--results-dir", str(tmp_path / "results"))
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    summary = json.loads(lines[-1])
    assert summary["heldout_eval"] == "first draft, T=1, 2 sample(s) per problem"
    for key in ("baseline_pass@1", "trained_pass@1", "heldout_problems", "seconds", "mlflow_run_id"):
        assert key in summary, key
    assert summary["heldout_problems"] == 2 and summary["registered_model"] == "coding-framework-generator"
    assert "before" in done.stdout and "after" in done.stdout  # the table
    assert Path(summary["report"]).is_file()
    filed = json.loads(Path(summary["result_file"]).read_text())  # results/<build>/seed<N>.json
    where = Path(summary["result_file"]).relative_to(tmp_path / "results")
    assert where.parts[1] == f"seed{summary['seed']}.json"
    assert filed["trained_pass@1"] == summary["trained_pass@1"] and filed["build"] == where.parts[0]
    assert len(filed["model_sha256"]) == 64 and filed["packages"]["torch"] and filed["cpu"]
    assert set(filed["load_avg"]) == {"before", "during_mean", "during_max", "after"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--algorithm", "a2c"], "valid algorithms"),
        (["--config", "no/such.yaml"], "config file not found"),
        (["--engine", "vllm"], "needs a LoRA policy"),
        (["--config", "quickstart_lora", "--engine", "sglang"], "rollout.engine"),
        (["--config", "quickstart_lora", "--engine-url", "localhost:8000"], "URL@MODEL"),
        (["--off-policy-correction", "is"], "'none', 'tis' or 'mis'"),
        (["--max-staleness", "-1"], "max-staleness"),
    ],
)
def test_bad_arguments_fail_without_a_traceback(tmp_path: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["train", "--run-dir", str(tmp_path / "r"), *args])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("setting", ["precision: bf16", "gradient_checkpointing: true"])
def test_gpu_only_settings_are_refused_on_the_cpu_in_one_line(tmp_path: Path, setting: str) -> None:
    bad = tmp_path / "gpu.yaml"
    bad.write_text(f"device: cpu\noptim: {{{setting}}}\n")
    result = CliRunner().invoke(app, ["train", "--run-dir", str(tmp_path / "r"), "--config", str(bad)])
    assert result.exit_code == 2 and "need device: cuda" in result.output and "Traceback" not in result.output


def test_an_unknown_config_key_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("rollout:\n  group_sise: 4\n")
    result = CliRunner().invoke(app, ["train", "--run-dir", str(tmp_path / "r"), "--config", str(bad)])
    assert result.exit_code == 2 and "rollout.group_sise" in result.output and "unknown key" in result.output


def test_sampled_eval_needs_a_temperature(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("eval:\n  samples: 4\n  temperature: 0.0\n")
    result = CliRunner().invoke(app, ["train", "--run-dir", str(tmp_path / "r"), "--config", str(bad)])
    assert result.exit_code == 2 and "eval.samples > 1 needs eval.temperature > 0" in result.output


def test_an_existing_run_needs_resume(tmp_path: Path) -> None:
    (tmp_path / "r" / "checkpoints" / "step-000001").mkdir(parents=True)
    result = CliRunner().invoke(app, ["train", "--run-dir", str(tmp_path / "r")])
    assert result.exit_code == 2 and "--resume" in result.output


@pytest.mark.slow
def test_supervisor_train_agents_returns_typed_results_and_switches_to_the_trained_model(
    tmp_path: Path,
) -> None:
    from coding_framework.supervisor import CodingSupervisor
    from coding_framework.training.run.results import TrainingResults

    with CodingSupervisor() as supervisor:
        results = supervisor.train_agents(
            "dapo", episodes=5, config=tiny_config(tmp_path), run_dir=tmp_path / "sv", seed=3, progress=False
        )
        assert isinstance(results, TrainingResults)
        assert results.algorithm == "dapo" and results.seed == 3
        assert results.steps == 2  # ceil(5 episodes / (2 problems x 2 samples))
        assert str(supervisor.config.agents.model) == f"local:{results.final_model_dir}"
