"""verl's agent loop on repository tasks, built as verl's AgentLoopWorker builds it,
on a scripted server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import hydra
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml
from omegaconf import OmegaConf
from verl.experimental.agent_loop.agent_loop import AgentLoopOutput, DictConfigWrap, _agent_loop_registry
from verl.utils.dataset.rl_dataset import RLHFDataset

from coding_framework.agents.repository import opening_messages
from coding_framework.agents.tool_calls import render_call
from coding_framework.config.repository import RepositoryConfig
from coding_framework.testing.engine import tiny_tokenizer
from coding_framework.testing.repository import calc_task, gold
from coding_framework.testing.verl_server import ScriptedServerManager
from coding_framework.training.verl.agent_loop import AGENT_NAME, DATA_SHA_KEY
from coding_framework.training.verl.audit import mask_summary
from coding_framework.training.verl.interop import from_agent_loop_output, to_data_proto
from coding_framework.training.verl.repository import (
    REPOSITORY_AGENT_NAME,
    RepositoryAgentLoop,
    repo_task_from_row,
    repository_step_metrics,
    verl_repository_rows,
    write_verl_repository_dataset,
)
from coding_framework.training.verl.run import rollout_history
from coding_framework.workspace import ToolCall

VERL_SAMPLING = {"temperature": 1.0, "top_p": 1.0, "top_k": -1, "repetition_penalty": 1.0, "logprobs": True}
REPO = RepositoryConfig(tool_format="json", sampling={"max_new_tokens": 512})


@pytest.fixture(scope="module")
def repository_yaml(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("workflow") / "repository.yaml"
    path.write_text(yaml.safe_dump(REPO.model_dump(mode="json")))
    return path


def _loop(server: ScriptedServerManager, repository_yaml: Path,
          response_length: int = 4096) -> RepositoryAgentLoop:
    """Instantiate from verl's registry entry with the arguments AgentLoopWorker._run_agent_loop passes."""
    rollout = {"prompt_length": 1024, "response_length": response_length}
    config = OmegaConf.create({"actor_rollout_ref": {"rollout": rollout}, "data": {},
                               AGENT_NAME: {"repository": str(repository_yaml)}})
    return hydra.utils.instantiate(
        _agent_loop_registry[REPOSITORY_AGENT_NAME], trainer_config=DictConfigWrap(config),
        server_manager=server, tokenizer=server.tokenizer, processor=None, dataset_cls=RLHFDataset,
        data_config=DictConfigWrap(config.data),
    )


def _row(uid: str = "uid-3") -> dict[str, Any]:
    row = verl_repository_rows([calc_task()], REPO, "json")[0]
    return {**row, "raw_prompt": row["prompt"], "uid": uid, "index": 0}


def _answers(calls: list[ToolCall]) -> list[str]:
    return [render_call(c, "json") for c in calls]


async def _run(repository_yaml: Path, answers: list[str], **loop: Any) -> tuple[AgentLoopOutput, Any]:
    server = ScriptedServerManager(tiny_tokenizer(), answers)
    out = await _loop(server, repository_yaml, **loop).run(dict(VERL_SAMPLING), **_row())
    return out, server


def test_registered_under_its_own_name(repository_yaml: Path) -> None:
    target = "coding_framework.training.verl.repository.RepositoryAgentLoop"
    assert _agent_loop_registry[REPOSITORY_AGENT_NAME] == {"_target_": target}
    loop = _loop(ScriptedServerManager(tiny_tokenizer()), repository_yaml)
    assert loop.resources.workflow.repository == REPO


async def test_a_resolved_episode_is_one_token_exact_row_across_tool_turns(repository_yaml: Path) -> None:
    task = calc_task()
    out, server = await _run(repository_yaml, _answers(gold(task)))
    tok = server.tokenizer
    traj = from_agent_loop_output(out)
    assert out.prompt_ids == server.requests[0]["prompt_ids"]
    ids = out.prompt_ids + out.response_ids
    generated, logprobs = [], []
    for request, call in zip(server.requests, traj.calls, strict=True):
        # every turn was sent exactly the ids before it, never re-tokenized
        assert request["prompt_ids"] == ids[: len(out.prompt_ids) + call.start]
        answer = out.response_ids[call.start : call.end]
        generated += answer
        logprobs += [-0.25 * ((len(request["prompt_ids"]) + i) % 5 + 1) for i in range(len(answer))]
    # mask 1 exactly on the server's tokens, with its logprobs; the tool observations are mask 0
    assert [t for t, m in zip(out.response_ids, out.response_mask, strict=True) if m] == generated
    assert [lp for lp, m in zip(out.response_logprobs, out.response_mask, strict=True) if m] == logprobs
    assert all(lp == 0.0 for lp, m in zip(out.response_logprobs, out.response_mask, strict=True) if not m)
    observed = tok.decode([t for t, m in zip(out.response_ids, out.response_mask, strict=True) if not m])
    assert "calc/ops.py" in observed and "passed" in observed  # list_files and run_tests, fed back
    assert out.response_mask[-1] == 1 and sum(out.response_mask) < len(out.response_mask)
    assert out.reward_score == 1.0 and out.num_turns == 2 * len(gold(task))
    extra = out.extra_fields
    assert extra["tool_calls"] == {"list_files": 1, "write_file": 1, "run_tests": 1, "finish": 1}
    assert extra["tool_call_counts"] == 4 and extra["stop_reason"] == "finished"
    assert extra["reward_extra_info"] == {"resolved": 1.0, "infrastructure_error": 0.0, "turns": 4,
                                          "parse_failures": 0, "tool_errors": 0}
    assert (extra["min_global_steps"], extra["max_global_steps"]) == (3, 3)
    assert traj.group_id == "uid-3" and traj.task_id == task.instance_id and traj.role == "generator"
    assert traj.metadata["fail_to_pass"] == [2, 2] and traj.metadata["infrastructure_error"] is False
    assert out.as_dict()["rm_scores"][-1] == 1.0


async def test_parse_failures_are_counted_and_an_unfixed_repository_earns_nothing(
        repository_yaml: Path) -> None:
    answers = ["The bug is in add.", *_answers([ToolCall("finish", {"summary": "nothing"})])]
    out, _ = await _run(repository_yaml, answers)
    assert out.reward_score == 0.0 and out.extra_fields["tool_calls"] == {"parse_error": 1, "finish": 1}
    assert out.extra_fields["tool_call_counts"] == 1
    info = out.extra_fields["reward_extra_info"]
    assert (info["resolved"], info["parse_failures"], info["turns"]) == (0.0, 1, 2)
    assert sum(out.response_mask) == sum(c.length for c in from_agent_loop_output(out).calls)


class BrokenSandbox:
    async def agrade(self, problem: Any, program: str) -> Any:
        raise OSError("the sandbox's worker died")


async def test_an_infrastructure_failure_is_counted_and_left_out_of_the_loss(
        repository_yaml: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = ScriptedServerManager(tiny_tokenizer(), _answers(gold(calc_task())))
    loop = _loop(server, repository_yaml)
    monkeypatch.setattr(loop.resources, "grader", BrokenSandbox())
    out = await loop.run(dict(VERL_SAMPLING), **_row())
    assert out.reward_score == 0.0 and set(out.response_mask) == {0}
    assert out.extra_fields["reward_extra_info"]["infrastructure_error"] == 1.0
    assert "the sandbox's worker died" in out.extra_fields["metadata"]["infrastructure_failure"]
    # the row converts back to what was generated, so it is still audited; verl's batch keeps it masked
    traj = from_agent_loop_output(out)
    assert sum(traj.response_mask) == sum(c.length for c in traj.calls) > 0
    batch = to_data_proto([traj], pad_token_id=0)
    assert int(batch.batch["response_mask"].sum()) == 0 and mask_summary(batch).consistent


async def test_the_response_budget_ends_the_episode_and_grades_the_repository_as_it_is(
        repository_yaml: Path) -> None:
    out, server = await _run(repository_yaml, _answers(gold(calc_task())), response_length=200)
    traj = from_agent_loop_output(out)
    assert len(server.requests) < len(gold(calc_task())) and len(out.response_ids) <= 200
    assert traj.metadata["response_budget_exhausted"] is True
    assert out.extra_fields["stop_reason"] == "token_budget" and out.reward_score == 0.0


def _verl_columns(outputs: list[AgentLoopOutput]) -> dict[str, np.ndarray]:
    """The non-tensor columns verl's ``AgentLoopWorker._postprocess`` makes of the outputs' extra fields."""
    columns: dict[str, np.ndarray] = {}
    for key in outputs[0].extra_fields["reward_extra_info"]:
        columns[key] = np.array([o.extra_fields["reward_extra_info"][key] for o in outputs])
    for key in {k for o in outputs for k in o.extra_fields}:
        column = np.empty(len(outputs), dtype=object)
        column[:] = [o.extra_fields.get(key) for o in outputs]
        columns[key] = column
    return columns


async def test_step_metrics_count_masked_rows_and_sum_up_the_others(
        repository_yaml: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    resolved, _ = await _run(repository_yaml, _answers(gold(calc_task())))
    parse, _ = await _run(repository_yaml, ["no call", *_answers([ToolCall("finish", {})])])
    loop = _loop(ScriptedServerManager(tiny_tokenizer(), _answers(gold(calc_task()))), repository_yaml)
    monkeypatch.setattr(loop.resources, "grader", BrokenSandbox())
    masked = await loop.run(dict(VERL_SAMPLING), **_row())
    metrics = repository_step_metrics(_verl_columns([resolved, parse, masked]))
    assert metrics == {
        "rollout/infra_masked": 1.0, "rollout/resolved_rate": 0.5, "rollout/turns_mean": 3.0,
        "rollout/parse_failures": 1.0, "rollout/tool_errors": 0.0, "rollout/finished_rate": 1.0,
        "tools/finish": 2.0, "tools/list_files": 1.0, "tools/run_tests": 1.0, "tools/write_file": 1.0,
    }


def test_dataset_rows_round_trip_through_parquet_and_rlhf_dataset(tmp_path: Path) -> None:
    task = calc_task()
    path = write_verl_repository_dataset([task], tmp_path / "train.parquet", REPO, "json", data_sha256="ab")
    row = pd.read_parquet(path).iloc[0].to_dict()
    assert repo_task_from_row(row) == task and row["agent_name"] == REPOSITORY_AGENT_NAME
    config = OmegaConf.create({"prompt_key": "prompt", "filter_overlong_prompts": False})
    item = RLHFDataset([str(path)], tiny_tokenizer(), config)[0]
    assert list(item["raw_prompt"]) == opening_messages(task, REPO, "json")
    assert repo_task_from_row(item) == task
    assert pq.read_schema(path).metadata[DATA_SHA_KEY] == b"ab"
    with pytest.raises(ValueError, match="write_verl_repository_dataset"):
        repo_task_from_row({"extra_info": {}})


def test_the_steps_rollout_figures_are_read_back_from_the_audit_file(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    records = [{"step": 1, "rows": 4, "rollout": {"rollout/resolved_rate": 0.0}},
               {"step": 1, "rows": 4, "rollout": {"rollout/resolved_rate": 0.25}},  # the step trained again
               {"step": 2, "rows": 4}]  # problems: no rollout figures
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert rollout_history(path) == {1: {"rollout/resolved_rate": 0.25}}
    assert rollout_history(tmp_path / "missing.jsonl") == {}
