"""One model identity through the real CLI: a registry reference evaluates exactly as the directory it names,
`solve` and `serve`'s /v1/solve agree on a per-role directory (whose adapters change what it writes), and a
bad model is one line on stderr with exit 2."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml

from coding_framework.config.model_ref import MODEL_FORMS
from coding_framework.config.serving import ServingConfig, SolveConfig
from coding_framework.serving import ServerThread
from coding_framework.testing.tiny_run import tiny_config
from tests.serving.role_models import build_per_role_dir

ROOT = Path(__file__).resolve().parents[1]
TASK = "Write a function add(a, b) that returns a + b."
TOKENS = 24


def _cli(*args: str, env: dict[str, str] | None = None,
         timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coding_framework.cli", *args], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
                          capture_output=True, text=True, timeout=timeout)


def _last_json(done: subprocess.CompletedProcess[str]) -> dict:
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _samples(path: Path) -> list[tuple[str, str, bool]]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [(r["task_id"], r["completion"], r["passed"]) for r in rows]


@pytest.mark.slow
def test_a_registry_reference_evaluates_as_the_directory_it_names(tmp_path: Path) -> None:
    run = tmp_path / "qs"
    config = tiny_config(tmp_path, steps=1, eval={"max_new_tokens": 12, "baseline": False})
    assert _last_json(_cli("quickstart", "--config", str(config), "--run-dir", str(run), "--no-progress"))
    registry = {"MLFLOW_TRACKING_URI": f"sqlite:///{run / 'mlflow.db'}"}
    common = ("evaluate", "--benchmark", "humaneval", "--n-samples", "1", "--limit", "5")
    by_name = _last_json(_cli(*common, "--model", "models:/coding-framework-generator@challenger",
                              "--results", str(tmp_path / "by_name.jsonl"), env=registry))
    by_dir = _last_json(_cli(*common, "--model", str(run / "final_model"),
                             "--results", str(tmp_path / "by_dir.jsonl")))
    assert "pass@1" in by_name and by_name["pass@1"] == by_dir["pass@1"]
    assert _samples(tmp_path / "by_name.jsonl") == _samples(tmp_path / "by_dir.jsonl")
    assert len(_samples(tmp_path / "by_dir.jsonl")) == 5


@pytest.fixture(scope="module")
def per_role(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A per-role directory and the same base without its adapters."""
    root = tmp_path_factory.mktemp("per-role")
    model = build_per_role_dir(root / "per-role")
    base = root / "base"
    shutil.copytree(model, base, ignore=shutil.ignore_patterns("adapters"))
    return model, base


def _solve(model: Path, agents: Path) -> str:
    done = _cli("solve", TASK, "--model", str(model), "--json", "--max-rounds", "1", "--agents-config",
                str(agents))
    return str(_last_json(done)["code"])


@pytest.mark.slow
def test_solve_and_serve_write_the_adapters_code(per_role: tuple[Path, Path], tmp_path: Path) -> None:
    model, base = per_role
    agents = tmp_path / "agents.yaml"
    agents.write_text(yaml.safe_dump({"generator": {"sampling": {"temperature": 0.0,
                                                                 "max_new_tokens": TOKENS}}}))
    by_cli = _solve(model, agents)
    solve = SolveConfig(temperature=0.0, max_new_tokens=TOKENS, reviewer="static")
    with ServerThread(ServingConfig(port=0, model=str(model), solve=solve)) as server:
        answer = httpx.post(f"{server.url}/v1/solve", json={"prompt": TASK, "max_rounds": 1}, timeout=300)
    assert answer.status_code == 200, answer.text
    assert answer.json()["code"] == by_cli
    # The test can fail: the base alone writes something else, so a path that dropped the adapters shows.
    assert _solve(base, agents) != by_cli


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ("serve", "--model", "nope", "--port", "0"),
        ("evaluate", "--benchmark", "humaneval", "--model", "models:/missing@x"),
        ("solve", "hi", "--model", "models:/gen"),
        ("train", "--run-dir", "unused", "--model", "ftp://x"),
        ("data", "rank", "--benchmark", "builtin", "--model", "/no/such/dir", "--out", "unused.jsonl"),
    ],
)
def test_a_bad_model_is_one_line_and_exit_2(args: tuple[str, ...], tmp_path: Path) -> None:
    registry = {"MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path / 'empty.db'}"}
    done = _cli(*args, env=registry, timeout=300)
    spec = args[args.index("--model") + 1]
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert repr(spec) in lines[0] and MODEL_FORMS in lines[0], lines[0]
    assert not (ROOT / "unused").exists() and not (ROOT / "unused.jsonl").exists()
