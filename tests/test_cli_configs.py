"""How every command finds its configs: shipped names or paths, never the working directory, and flags
that override the YAML only when given (`evaluate --sandbox-config` included)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from coding_framework.cli.main import app
from coding_framework.config import SandboxConfig, load_config, shipped_config, shipped_config_names
from coding_framework.config.agents import AgentsConfig
from coding_framework.config.embedded import EmbeddedModelConfig
from coding_framework.config.graph import GraphConfig, WorkflowConfig
from coding_framework.config.training import TrainingConfig
from coding_framework.evaluation.samples import canonical_samples
from coding_framework.problems import Problem, builtin_problems
from coding_framework.testing.models import tiny_model_dir
from coding_framework.training.quickstart import quickstart_config

SRC = Path(__file__).resolve().parents[1] / "src"
CLI = [sys.executable, "-m", "coding_framework.cli"]
SANDBOX_YAML = "backend: docker\nworkers: 3\nlimits: {timeout_s: 0.5, memory_mb: 256}\n"


class Stop(ValueError):
    """Raised by a spy once it has recorded what the command would run (the CLI reports it and exits 2)."""


def spy(monkeypatch: pytest.MonkeyPatch, target: str) -> list[Any]:
    """Replace ``target`` (called with the config first) by a recorder that stops the command."""
    seen: list[Any] = []

    def record(config: Any, *args: Any, **kwargs: Any) -> None:
        seen.append((config, *args, *kwargs.values()))
        raise Stop("stopped by the test")

    monkeypatch.setattr(target, record)
    return seen


def invoke_until_stopped(*args: str) -> None:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 2 and "stopped by the test" in result.output, result.output


def elsewhere(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python *args`` in ``tmp_path`` (no configs/ there) on this checkout's sources."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def sandbox_yaml(tmp_path: Path) -> Path:
    path = tmp_path / "sandbox.yaml"
    path.write_text(SANDBOX_YAML)
    return path


# evaluate: the sandbox file's settings hold; --timeout, --workers and --backend override them when given


def test_evaluate_keeps_the_sandbox_file_when_no_flag_is_given(monkeypatch, sandbox_yaml) -> None:
    seen = spy(monkeypatch, "coding_framework.grading.Grader")
    invoke_until_stopped(
        "evaluate", "--benchmark", "builtin", "--canonical", "--sandbox-config", str(sandbox_yaml)
    )
    ((config,),) = seen
    assert config.backend == "docker" and config.workers == 3
    assert config.limits.timeout_s == 0.5 and config.limits.memory_mb == 256


def test_evaluate_flags_override_the_sandbox_file_and_nothing_else(monkeypatch, sandbox_yaml) -> None:
    seen = spy(monkeypatch, "coding_framework.grading.Grader")
    flags = ["--timeout", "7", "--backend", "process", "--workers", "2"]
    invoke_until_stopped(
        "evaluate", "--benchmark", "builtin", "--canonical", "--sandbox-config", str(sandbox_yaml), *flags
    )
    ((config,),) = seen
    assert config.backend == "process" and config.workers == 2
    assert config.limits.timeout_s == 7.0 and config.limits.memory_mb == 256  # no flag: the file's


def test_evaluate_defaults_to_the_shipped_sandbox(monkeypatch) -> None:
    seen = spy(monkeypatch, "coding_framework.grading.Grader")
    invoke_until_stopped("evaluate", "--benchmark", "builtin", "--canonical")
    invoke_until_stopped("evaluate", "--benchmark", "builtin", "--canonical", "--sandbox-config", "sandbox")
    assert seen == [(load_config(SandboxConfig, shipped_config("sandbox")),)] * 2


def test_evaluate_with_a_model_grades_in_the_same_sandbox(monkeypatch, sandbox_yaml) -> None:
    seen = spy(monkeypatch, "coding_framework.supervisor.CodingSupervisor")
    args = ["--benchmark", "builtin", "--model", "embedded", "--sandbox-config", str(sandbox_yaml)]
    invoke_until_stopped("evaluate", *args, "--timeout", "4")
    ((config, _resolved),) = seen
    sandbox = config.sandbox
    assert (sandbox.backend, sandbox.workers, sandbox.limits.timeout_s) == ("docker", 3, 4.0)
    assert str(config.agents.model) == "embedded" and config.graph == load_config(GraphConfig, "graph")


def test_evaluate_lists_the_valid_backends_for_a_bad_flag() -> None:
    result = CliRunner().invoke(
        app, ["evaluate", "--benchmark", "builtin", "--canonical", "--backend", "podman"]
    )
    assert result.exit_code == 2
    assert result.output == "error: unknown sandbox backend 'podman'; valid backends: ['docker', 'process']\n"


def test_the_sandbox_enforces_the_file_timeout_unless_the_flag_overrides_it(tmp_path) -> None:
    problem = builtin_problems()[0]
    sleepy = canonical_samples([problem])[0].completion + "\nimport time\ntime.sleep(1.5)\n"  # at load
    samples = tmp_path / "s.jsonl"
    samples.write_text(json.dumps({"task_id": problem.task_id, "completion": sleepy}) + "\n")
    config = tmp_path / "sandbox.yaml"
    config.write_text("backend: process\nworkers: 1\nlimits: {timeout_s: 0.5}\n")

    def status(*flags: str) -> object:
        results = tmp_path / "r.jsonl"
        args = ["--samples", str(samples), "--results", str(results), "--sandbox-config", str(config)]
        done = subprocess.run(
            [*CLI, "evaluate", "--benchmark", "builtin", *args, *flags],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(results.read_text())["status"]

    assert status() == "timeout"
    assert status("--timeout", "20") == "passed"


# --config by shipped name or by path, for every command that reads one


@pytest.mark.parametrize("value", ["grpo_basic", "grpo_basic.yaml", "copy"])
def test_train_takes_a_shipped_name_or_a_path(monkeypatch, tmp_path, value) -> None:
    if value == "copy":
        value = str(tmp_path / "mine.yaml")
        Path(value).write_text(shipped_config("grpo_basic").read_text())
    seen = spy(monkeypatch, "coding_framework.training.trainer.Trainer")
    invoke_until_stopped("train", "--run-dir", str(tmp_path / "r"), "--config", value, "--seed", "9")
    ((config, _run_dir, _resume, _progress),) = seen
    assert config == load_config(TrainingConfig, "grpo_basic").model_copy(update={"seed": 9})


def test_quickstart_defaults_to_the_shipped_config_and_keeps_a_files_seed(monkeypatch, tmp_path) -> None:
    seen = spy(monkeypatch, "coding_framework.training.quickstart.run_quickstart")
    invoke_until_stopped("quickstart")
    mine = tmp_path / "mine.yaml"
    mine.write_text("seed: 5\n")
    invoke_until_stopped("quickstart", "--config", str(mine))
    invoke_until_stopped("quickstart", "--config", str(mine), "--seed", "7")
    (shipped, shipped_dir, _), (five, five_dir, _), (seven, _, _) = seen
    assert (
        shipped == quickstart_config() and shipped.steps == 8 and f"seed{shipped.seed}-" in shipped_dir.name
    )
    assert five.seed == 5 and "seed5-" in five_dir.name
    assert seven.seed == 7


def test_bootstrap_model_defaults_to_the_shipped_config(monkeypatch, tmp_path) -> None:
    seen = spy(monkeypatch, "coding_framework.embedded.ensure_embedded_model")
    invoke_until_stopped("bootstrap-model")
    invoke_until_stopped("bootstrap-model", "--config", "embedded_model")
    mine = tmp_path / "mine.yaml"
    mine.write_text("seed: 3\n")
    invoke_until_stopped("bootstrap-model", "--config", str(mine))
    assert [config for config, _force in seen] == [
        load_config(EmbeddedModelConfig, "embedded_model"),
        load_config(EmbeddedModelConfig, "embedded_model"),
        EmbeddedModelConfig(seed=3),
    ]


def test_solve_defaults_to_the_shipped_workflow_and_flags_override_it(monkeypatch, tmp_path) -> None:
    seen = spy(monkeypatch, "coding_framework.supervisor.CodingSupervisor")
    invoke_until_stopped("solve", "Reverse a string.")
    graph = tmp_path / "graph.yaml"
    graph.write_text("max_rounds: 5\nreview: never\n")
    invoke_until_stopped(
        "solve", "Reverse a string.", "--graph-config", str(graph), "--agents-config", "agents"
    )
    invoke_until_stopped("solve", "Reverse a string.", "--graph-config", str(graph), "--max-rounds", "2")
    (shipped, _), (from_file, _), (flagged, _) = seen  # the config, and the models the CLI resolved
    assert shipped == WorkflowConfig(
        agents=load_config(AgentsConfig, "agents"),
        graph=load_config(GraphConfig, "graph"),
        sandbox=load_config(SandboxConfig, "sandbox"),
    )
    assert (from_file.graph.max_rounds, from_file.graph.review) == (5, "never")
    assert (flagged.graph.max_rounds, flagged.graph.review) == (2, "never")


@pytest.mark.parametrize(
    "args",
    [
        ["train", "--run-dir", "r", "--config", "grpo_basics"],
        ["quickstart", "--config", "grpo_basics"],
        ["bootstrap-model", "--config", "grpo_basics"],
        ["solve", "Reverse a string.", "--agents-config", "grpo_basics"],
        ["evaluate", "--benchmark", "builtin", "--canonical", "--sandbox-config", "grpo_basics"],
    ],
)
def test_an_unknown_config_is_one_line_listing_the_shipped_names(tmp_path, monkeypatch, args) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and "Traceback" not in result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith("error: config file not found: grpo_basics (nor is it a shipped config: agents, ")
    assert all(name in line for name in shipped_config_names())


def test_configs_lists_and_prints_the_shipped_files() -> None:
    listed = CliRunner().invoke(app, ["configs"])
    assert listed.exit_code == 0 and listed.output.split() == shipped_config_names()
    printed = CliRunner().invoke(app, ["configs", "grpo_basic"])
    assert printed.exit_code == 0 and printed.output == shipped_config("grpo_basic").read_text()
    unknown = CliRunner().invoke(app, ["configs", "grpo"])
    assert unknown.exit_code == 2 and "no shipped config is called 'grpo'; shipped: agents" in unknown.output


# from a directory outside the checkout


def test_the_quickstart_config_ignores_the_working_directory(tmp_path, monkeypatch) -> None:
    expected = quickstart_config()
    monkeypatch.chdir(tmp_path)
    (tmp_path / "configs").mkdir()
    for decoy in (tmp_path / "quickstart", tmp_path / "configs" / "quickstart.yaml"):
        decoy.write_text("not: [a, config\n")
    assert quickstart_config() == expected and expected.steps == 8
    shown = elsewhere(tmp_path, "-m", "coding_framework.cli", "configs", "quickstart")
    assert shown.returncode == 0 and shown.stdout == shipped_config("quickstart").read_text()


@pytest.mark.slow  # imports the trainer (torch, transformers) in a fresh interpreter
def test_the_quickstart_config_resolves_from_another_directory(tmp_path) -> None:
    code = "from coding_framework.training.quickstart import quickstart_config; "
    code += "print(quickstart_config().model_dump_json())"
    done = elsewhere(tmp_path, "-c", code)
    assert done.returncode == 0, done.stderr
    assert TrainingConfig.model_validate_json(done.stdout) == quickstart_config()


@pytest.mark.slow
def test_solve_runs_from_another_directory(tmp_path) -> None:
    model = tiny_model_dir(tmp_path / "tiny")
    problem = tmp_path / "add.json"
    problem.write_text(
        Problem(
            task_id="t/add",
            prompt="Write add(a, b).",
            entry_point="add",
            prompt_is_code=False,
            test_code="assert add(1, 2) == 3\n",
        ).model_dump_json()
    )
    done = elsewhere(
        tmp_path,
        "-m",
        "coding_framework.cli",
        "solve",
        "--problem-file",
        str(problem),
        "--model",
        f"local:{model}",
        "--json",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert (
        result["task_id"] == "t/add" and 1 <= result["rounds"] <= load_config(GraphConfig, "graph").max_rounds
    )
