"""The Generator's warm start: passing programs as answers to the Generator's own request, trained on the
answer's tokens only, gated by the held-out loss, and runnable alone from the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from coding_framework.cli.main import app
from coding_framework.config.warm_start import GeneratorWarmStartConfig
from coding_framework.llm.session import TokenSession
from coding_framework.problems import Problem
from coding_framework.problems.prompts import generation_messages
from coding_framework.testing.engine import tiny_tokenizer
from coding_framework.testing.tiny_run import tiny_config
from coding_framework.training.generator_sft import answer_for, sft_rows
from coding_framework.training.sft import IGNORE

ADD = Problem(task_id="t/add", prompt="Write add(a, b).", entry_point="add", prompt_is_code=False,
              test_code="assert add(1, 2) == 3\n", source="test",
              solutions=["def add(a, b):\n    return a + b\n", "def add(a, b):\n    " + "x = 1\n    " * 80])


def test_an_example_is_the_generators_request_answered_by_a_fenced_program() -> None:
    tok = tiny_tokenizer()
    rows = sft_rows(tok, [ADD], GeneratorWarmStartConfig(max_answer_tokens=40))
    assert len(rows) == 1  # the long second solution is left out, not cut
    ids, labels = rows[0]
    session = TokenSession(tok)
    session.add_messages(generation_messages(ADD))
    session.add_generation_prompt()
    n = len(session)
    assert ids[:n] == session.ids and labels[:n] == [IGNORE] * n
    answer = tok(answer_for(ADD.solutions[0]), add_special_tokens=False)["input_ids"]
    assert labels[n:] == ids[n:] == [*answer, tok.convert_tokens_to_ids("<|im_end|>")]
    assert len(sft_rows(tok, [ADD], GeneratorWarmStartConfig(solutions_per_problem=1))) == 1


@pytest.mark.slow
def test_warm_start_only_lowers_the_heldout_loss_and_keeps_its_model(tmp_path: Path) -> None:
    settings = {"enabled": True, "epochs": 3, "lr": 0.01, "micro_batch_size": 4, "heldout_limit": 4}
    config = tiny_config(tmp_path, warm_start=settings)
    run = tmp_path / "run"
    done = CliRunner().invoke(app, ["train", "--config", str(config), "--run-dir", str(run),
                                    "--warm-start-only", "--no-progress"])
    assert done.exit_code == 0, done.output
    metrics = json.loads((run / "warm_start.json").read_text())
    assert metrics["warm_start/examples"] > 0 and metrics["warm_start/heldout_examples"] > 0
    assert metrics["warm_start/heldout_loss_after"] < metrics["warm_start/heldout_loss_before"]
    assert (run / "warm_start_model" / "config.json").is_file()

    full = CliRunner().invoke(app, ["train", "--config", str(config), "--run-dir", str(tmp_path / "rl"),
                                    "--steps", "1", "--no-progress"])
    assert full.exit_code == 0, full.output
    assert json.loads(full.stdout.strip().splitlines()[-1])["step"] == 1
    again = json.loads((tmp_path / "rl" / "warm_start.json").read_text())
    assert {k: v for k, v in again.items() if k != "warm_start/seconds"} == {
        k: v for k, v in metrics.items() if k != "warm_start/seconds"
    }  # the same warm start, then RL from it

    strict = tiny_config(tmp_path, warm_start={**settings, "max_heldout_loss_ratio": 1e-6})
    refused = CliRunner().invoke(app, ["train", "--config", str(strict), "--run-dir", str(tmp_path / "r2"),
                                       "--no-progress"])
    assert refused.exit_code == 2 and "did not lower the held-out loss enough" in refused.output
    assert "Traceback" not in refused.output and (tmp_path / "r2" / "warm_start_model").is_dir()
