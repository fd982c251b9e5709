"""`coding-framework evaluate` on repository benchmarks: a record per sample, the summary last on stdout with
the tier named, progress per episode, SWE-bench-style predictions and gold patches graded, bad input in one
line. The model is a scripted one put in the repository graph's place, so the CLI path runs end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlflow import MlflowClient
from typer.testing import CliRunner

from coding_framework import supervisor
from coding_framework.cli.main import app
from coding_framework.graphs.repository import repository_graph_for
from coding_framework.testing.chat import ScriptedChatModel
from coding_framework.testing.repository import calc_task, gold, scripted_model

TASK = calc_task()
ENDPOINT = "http://127.0.0.1:9@scripted"  # never called: the scripted model stands in for it


@pytest.fixture
def swebench_file(tmp_path: Path) -> Path:
    """calc_task() as a SWE-bench JSONL row over a snapshot folder named by its instance_id."""
    snapshot = tmp_path / "snapshots" / TASK.instance_id
    for path, text in TASK.files.items():
        (snapshot / path).parent.mkdir(parents=True, exist_ok=True)
        (snapshot / path).write_text(text)
    row = {"repo": "example/calc", "instance_id": TASK.instance_id, "base_commit": "0" * 40,
           "patch": TASK.patch, "test_patch": TASK.test_patch, "problem_statement": TASK.problem_statement,
           "version": "0.1", "FAIL_TO_PASS": json.dumps(TASK.FAIL_TO_PASS),
           "PASS_TO_PASS": json.dumps(TASK.PASS_TO_PASS)}
    file = tmp_path / "tasks.jsonl"
    file.write_text(json.dumps(row) + "\n")
    return file


def use_model(monkeypatch: pytest.MonkeyPatch, model: ScriptedChatModel) -> None:
    monkeypatch.setattr(supervisor, "repository_graph_for",
                        lambda config, grader, **kw: repository_graph_for(config, grader, chat_model=model))


def run(*args: str):
    return CliRunner().invoke(app, ["evaluate", *args, "--workers", "2"])


def on_file(file: Path) -> list[str]:
    return ["--benchmark", f"swebench:{file}", "--repos-dir", str(file.parent / "snapshots")]


def test_episodes_write_a_record_per_sample_and_the_summary_last(tmp_path, swebench_file, monkeypatch):
    finish = '```tool\n{"name": "finish", "arguments": {}}\n```'
    model = scripted_model(TASK, gold)
    model.answers = [*model.answers[:4], "I would look at calc/ops.py first.", finish]  # gold, then a no-op
    use_model(monkeypatch, model)
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store)
    results = tmp_path / "r.jsonl"
    out = run(*on_file(swebench_file), "--model", ENDPOINT, "--n-samples", "2", "--concurrency", "1",
              "--results", str(results))
    assert out.exit_code == 0, out.output
    line = json.loads(out.stdout.strip().splitlines()[-1])
    assert (line["pass@1"], line["resolved_rate"], line["tier"]) == (0.5, 0.5, "hardened-repository")
    assert (line["tasks"], line["n_samples"], line["mean_turns"]) == (1, 2, 3.0)
    assert line["tool_calls"] == {"finish": 2, "list_files": 1, "run_tests": 1, "write_file": 1}
    assert (line["parse_failures"], line["parse_failure_share"]) == (1, 1 / 6)
    assert line["benchmark"] == f"swebench:{swebench_file}" and line["infrastructure_errors"] == 0
    rows = [json.loads(r) for r in results.read_text().splitlines()]
    assert [(r["instance_id"], r["sample"], r["resolved"]) for r in rows] == [(TASK.instance_id, 0, True),
                                                                          (TASK.instance_id, 1, False)]
    assert set(rows[0]) >= {"reward", "fail_to_pass", "pass_to_pass", "turns", "tool_calls", "parse_failures",
                            "stop_reason", "refused", "tier", "tokens", "seconds", "model_patch"}
    progress = [ln for ln in out.stderr.splitlines() if ln.startswith("episode ")]
    assert len(progress) == 2 and progress[-1].startswith(f"episode 2/2: {TASK.instance_id} unresolved")
    # Every episode is an MLflow trace in the store MLFLOW_TRACKING_URI names.
    client = MlflowClient(store)
    experiment = client.get_experiment_by_name("coding-framework-evaluation")
    traces = client.search_traces(locations=[experiment.experiment_id])
    assert sorted((t.info.tags["sample"], t.info.tags["resolved"]) for t in traces) == [("0", "true"),
                                                                                        ("1", "false")]


def test_predictions_and_gold_patches_are_graded_without_a_model(tmp_path, swebench_file):
    benchmark = on_file(swebench_file)
    out = run(*benchmark, "--canonical", "--results", str(tmp_path / "gold.jsonl"))
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout.strip().splitlines()[-1])["resolved_rate"] == 1.0
    broken = TASK.patch.replace("-    return a - b", "-    return a * b")
    predictions = tmp_path / "preds.jsonl"
    predicted = [{"instance_id": TASK.instance_id, "model_patch": p, "model_name_or_path": "m"}
                 for p in (TASK.patch, "", broken)]
    predictions.write_text("".join(json.dumps(row) + "\n" for row in predicted))
    out = run(*benchmark, "--samples", str(predictions), "--results", str(tmp_path / "p.jsonl"))
    assert out.exit_code == 0, out.output
    line = json.loads(out.stdout.strip().splitlines()[-1])
    assert (line["samples"], line["resolved_rate"], line["patch_failures"]) == (3, 1 / 3, 1)
    rows = [json.loads(r) for r in (tmp_path / "p.jsonl").read_text().splitlines()]
    assert [(r["resolved"], r["status"]) for r in rows] == [(True, "passed"), (False, "failed"),
                                                            (False, "patch_failed")]


@pytest.mark.parametrize(("args", "message"), [
    (["--benchmark", "minirepo:dev", "--model", ENDPOINT], "unknown split 'dev'"),
    (["--benchmark", "minirepo", "--model", ENDPOINT], "minirepo takes a split"),
    (["--benchmark", "swebench:/nonexistent/tasks.jsonl", "--canonical"], "cannot read the file"),
    (["--benchmark", "minirepo:test", "--model", ENDPOINT, "--max-rounds", "2"], "use --max-turns"),
    (["--benchmark", "minirepo:test"], "pass exactly one of"),
    (["--benchmark", "humaneval", "--canonical", "--max-turns", "3"], "apply to repository benchmarks"),
])
def test_bad_input_is_one_line_without_a_traceback(args, message):
    out = run(*args)
    assert out.exit_code == 2, out.output
    errors = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(errors) == 1 and message in errors[0] and "Traceback" not in out.output


def test_bad_predictions_name_the_line(tmp_path, swebench_file):
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text('{"instance_id": "other", "model_patch": ""}\n')
    out = run(*on_file(swebench_file), "--samples", str(predictions))
    assert out.exit_code == 2 and "line 1: unknown instance_id 'other'" in out.stderr


@pytest.mark.slow
def test_the_shipped_test_split_is_resolved_by_its_gold_patches(tmp_path):
    out = run("--benchmark", "minirepo:test", "--canonical", "--results", str(tmp_path / "r.jsonl"))
    assert out.exit_code == 0, out.output
    line = json.loads(out.stdout.strip().splitlines()[-1])
    assert (line["resolved_rate"], line["infrastructure_errors"], line["patch_failures"]) == (1.0, 0, 0)
