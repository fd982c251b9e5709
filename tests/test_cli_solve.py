from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from coding_framework.cli.solve import read_problem
from coding_framework.testing.models import tiny_model_dir
from coding_framework.testing.problems import ADD

CLI = str(Path(sys.executable).with_name("coding-framework"))


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300, check=False)


def test_problem_files_are_problems_or_text(tmp_path) -> None:
    (tmp_path / "p.json").write_text(ADD.model_dump_json())
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(ADD.model_dump()))
    (tmp_path / "p.txt").write_text("Reverse a string.\n")
    assert read_problem(tmp_path / "p.json") == ADD
    assert read_problem(tmp_path / "p.yaml") == ADD
    assert read_problem(tmp_path / "p.txt") == "Reverse a string.\n"


def test_bad_problem_files_name_the_problem(tmp_path) -> None:
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "partial.yaml").write_text("task_id: x\nprompt: y\n")
    with pytest.raises(ValueError, match="not valid JSON"):
        read_problem(tmp_path / "bad.json")
    with pytest.raises(ValueError, match="entry_point: Field required"):
        read_problem(tmp_path / "partial.yaml")
    with pytest.raises(ValueError, match="not found"):
        read_problem(tmp_path / "missing.json")


def test_cli_errors_are_one_line_without_traceback(tmp_path) -> None:
    done = _cli("solve")
    assert done.returncode == 2
    assert (
        done.stderr.strip() == 'error: give the problem as text ("...") or with --problem-file FILE, not both'
    )
    bad_model = _cli("solve", "Reverse a string.", "--model", "gpt:nothing")
    assert bad_model.returncode == 2 and "model 'gpt:nothing': no such model directory" in bad_model.stderr
    assert "Traceback" not in bad_model.stderr


@pytest.mark.slow
def test_cli_solve_json_last_line_with_a_local_model(tmp_path) -> None:
    model = tiny_model_dir(tmp_path / "tiny")
    problem = tmp_path / "add.json"
    problem.write_text(ADD.model_dump_json())
    done = _cli(
        "solve", "--problem-file", str(problem), "--model", f"local:{model}", "--max-rounds", "2", "--json"
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert isinstance(result["code"], str) and isinstance(result["passed"], bool)
    assert result["rounds"] == len(result["feedback"]) and 1 <= result["rounds"] <= 2
    assert all(isinstance(f, str) and f for f in result["feedback"])
    assert result["task_id"] == "t/add"
