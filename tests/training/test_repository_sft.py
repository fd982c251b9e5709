"""The tool-calling agent's warm start on repository tasks: gold demonstrations played through the real tools,
rendered as an episode renders them, trained on the answers' tokens only, gated by the held-out loss, and
runnable alone from the CLI."""

from __future__ import annotations

import asyncio
import difflib
import json
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from coding_framework.agents.repository import opening_messages
from coding_framework.agents.tool_calls import parse_tool_call, render_observation
from coding_framework.cli.main import app
from coding_framework.config.graph import WorkflowConfig
from coding_framework.config.repository import RepositoryConfig
from coding_framework.config.training import TrainingConfig
from coding_framework.grading import Grader
from coding_framework.llm.session import TokenSession
from coding_framework.repotasks.minirepo import write_minirepos
from coding_framework.testing.engine import ScriptedEngine, tiny_tokenizer
from coding_framework.testing.repository import calc_task
from coding_framework.testing.tiny_run import tiny_config
from coding_framework.training.repository_sft import demonstration, encode_demonstration, gold_calls
from coding_framework.training.rollouts.episodes import step_workflow
from coding_framework.training.rollouts.repository import collect_repository
from coding_framework.training.rollouts.scoring import to_trajectories
from coding_framework.training.sft import IGNORE
from coding_framework.workspace import ToolCall

CONFIG = RepositoryConfig()


def test_a_demonstration_is_the_gold_fix_played_through_the_real_tools() -> None:
    task = calc_task()
    demo = asyncio.run(demonstration(task, CONFIG, "json"))
    assert demo is not None and demo.opening == opening_messages(task, CONFIG, "json")
    calls = [parse_tool_call(answer, "json") for answer in demo.answers]
    assert calls == [
        ToolCall("list_files", {}),
        ToolCall("read_file", {"path": "calc/ops.py"}),
        ToolCall("replace_in_file", {"path": "calc/ops.py", "old": "    return a - b\n",
                                     "new": "    return a + b\n"}),
        ToolCall("finish", {"summary": "fixed the issue in calc/ops.py"}),
    ]
    numbered = "\n".join(f"{n:>4} {line}" for n, line in enumerate(task.files["calc/ops.py"].splitlines(), 1))
    assert demo.observations == [
        render_observation("list_files", "\n".join(sorted(task.files)), "json"),
        render_observation("read_file", numbered, "json"),
        render_observation("replace_in_file", "replaced 1 occurrence in calc/ops.py at line 2", "json"),
        render_observation("finish", "finished", "json"),
    ]


def test_a_hunk_is_widened_until_its_text_is_unique_and_a_long_file_is_read_around_it() -> None:
    body = "x = 1\ny = 2\nx = 1\n" + "z = 0\n" * 200
    task = calc_task().model_copy(update={"files": {**calc_task().files, "calc/ops.py": body}})
    fixed = body.replace("y = 2\nx = 1\n", "y = 2\nx = 3\n", 1)
    task = task.model_copy(update={"patch": _diff("calc/ops.py", body, fixed)})
    calls = gold_calls(task, output_chars=200)
    assert calls[1] == ToolCall("read_file", {"path": "calc/ops.py", "start": 1, "end": 7})
    assert calls[2].arguments["old"] == "y = 2\nx = 1\n" and calls[2].arguments["new"] == "y = 2\nx = 3\n"
    demo = asyncio.run(demonstration(task, RepositoryConfig(output_chars=200), "json"))
    assert demo is not None and "[read_file]\n   1 x = 1" in demo.observations[1]


def test_only_the_answers_and_their_end_tokens_carry_labels() -> None:
    tok = tiny_tokenizer()
    demo = asyncio.run(demonstration(calc_task(), CONFIG, "json"))
    assert demo is not None
    ids, labels = encode_demonstration(tok, demo, "generator")
    opening = TokenSession(tok)
    opening.add_messages(demo.opening)
    assert ids[: len(opening)] == opening.ids
    end = tok.convert_tokens_to_ids("<|im_end|>")
    spans, current = [], []
    for token, label in zip(ids, labels, strict=True):
        if label != IGNORE:
            assert label == token
            current.append(token)
        elif current:
            spans.append(current)
            current = []
    spans += [current] if current else []
    assert spans == [[*tok(a, add_special_tokens=False)["input_ids"], end] for a in demo.answers]
    # Everything between the answers is prompt: the observations as user messages, the assistant headers;
    # the row ends with the last answer (finish), as an episode's does.
    text = tok.decode(ids)
    assert all(obs in text for obs in demo.observations[:-1])
    assert labels[-1] == ids[-1] == end


def test_a_demonstration_is_token_for_token_the_episode_the_agent_plays_with_its_answers() -> None:
    task, tok = calc_task(), tiny_tokenizer()
    demo = asyncio.run(demonstration(task, CONFIG, "json"))
    assert demo is not None
    engine = ScriptedEngine(respond=lambda prompt: demo.answers[prompt.count("<|im_start|>assistant") - 1])
    workflow = step_workflow(WorkflowConfig(), max_new_tokens=512, temperature=1.0, top_p=1.0)
    with Grader() as grader:
        batch = asyncio.run(collect_repository(engine, workflow, grader, [task], 1, seed=0))
    (episode,) = batch.episodes
    assert episode.passed and episode.state["stop_reason"] == "finished"
    (row,) = to_trajectories(batch.episodes, [1.0], ["generator"], step=0)
    ids, labels = encode_demonstration(tok, demo, "generator")
    assert row.ids == ids
    assert [t for t, m in zip(row.response_ids, row.response_mask, strict=True) if m] == \
        [t for t in labels if t != IGNORE]


def test_repository_warm_start_belongs_to_repository_runs() -> None:
    with pytest.raises(ValidationError, match="repository_warm_start trains on repository tasks"):
        TrainingConfig.model_validate({"repository_warm_start": {"enabled": True}})
    config = TrainingConfig.model_validate({"data": {"repository": {}},
                                            "repository_warm_start": {"enabled": True}})
    assert config.repository_warm_start.enabled


@pytest.mark.slow
def test_warm_start_only_lowers_the_heldout_loss_on_repository_tasks(tmp_path: Path) -> None:
    file = tmp_path / "repos.jsonl.gz"
    variants = [calc_task().model_copy(update={"instance_id": f"calc__{n}"}) for n in "abc"]
    write_minirepos({"train": variants[:2], "validation": variants[2:]}, file)
    settings = {"enabled": True, "epochs": 3, "lr": 0.01, "micro_batch_size": 2}
    config = tiny_config(tmp_path, data={"repository": {"minirepo_file": str(file)}},
                         rollout={"problems_per_step": 2, "group_size": 2, "max_new_tokens": 8},
                         repository_warm_start=settings)
    run = tmp_path / "run"
    done = CliRunner().invoke(app, ["train", "--config", str(config), "--run-dir", str(run),
                                    "--warm-start-only", "--no-progress"])
    assert done.exit_code == 0, done.output
    metrics = json.loads((run / "warm_start.json").read_text())
    assert metrics["warm_start/examples"] == 2 and metrics["warm_start/heldout_examples"] == 1
    assert metrics["warm_start/heldout_loss_after"] < metrics["warm_start/heldout_loss_before"]
    assert (run / "warm_start_model" / "config.json").is_file()

    strict = tiny_config(tmp_path, data={"repository": {"minirepo_file": str(file)}},
                         rollout={"problems_per_step": 2, "group_size": 2, "max_new_tokens": 8},
                         repository_warm_start={**settings, "max_heldout_loss_ratio": 1e-6})
    refused = CliRunner().invoke(app, ["train", "--config", str(strict), "--run-dir", str(tmp_path / "r2"),
                                       "--warm-start-only", "--no-progress"])
    assert refused.exit_code == 2 and "did not lower the held-out loss enough" in refused.output
    assert "Traceback" not in refused.output and (tmp_path / "r2" / "warm_start_model").is_dir()


def _diff(path: str, old: str, new: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}"))
