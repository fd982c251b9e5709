"""`coding-framework verl-preflight` refuses bad input with one line and exit code 2, before starting Ray."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from coding_framework.cli.main import app


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--algorithm", "a2c"], "unknown algorithm 'a2c'; valid algorithms: ['dapo', 'grpo', 'ppo', "),
        (["--n", "0"], "--n: Input should be greater than or equal to 1"),
        (["--problems", "0"], "--problems: Input should be greater than or equal to 1"),
        (["--engine", "sglang"], "--engine: Input should be 'local' or 'vllm'"),
        (["--problems", "3", "--n", "1"], "3 rows do not split evenly over 2 workers"),
        (["--problems", "1000", "--n", "2"], "built-in problems"),
        (["--model", "http://127.0.0.1:9/v1@m"], "--model: 'http://127.0.0.1:9/v1@m' is an endpoint"),
        (["--model", "models:/coder"], "models:/NAME/VERSION or models:/NAME@ALIAS"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["verl-preflight", "--run-dir", str(tmp_path / "r"), *args])
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.slow  # composes verl's config with hydra
def test_an_unknown_verl_override_is_named(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["verl-preflight", "--run-dir", str(tmp_path / "r"), "--no-progress",
                                      "--override", "actor_rollout_ref.rollout.nosuch=1"])
    assert result.exit_code == 2 and "actor_rollout_ref.rollout.nosuch" in result.output
    assert "Traceback" not in result.output


@pytest.mark.slow  # composes verl's config with hydra
def test_a_sampling_setting_the_token_servers_lack_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["verl-preflight", "--run-dir", str(tmp_path / "r"), "--no-progress",
                                      "--override", "actor_rollout_ref.rollout.top_k=20"])
    assert result.exit_code == 2 and "top_k=20" in result.output and "Traceback" not in result.output
