"""Evaluating repository tasks through `CodingSupervisor.evaluate`: scripted policies through the real graph,
tools and hardened grader give the resolved rate, pass@k, turns, tool calls and parse failures they must."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from langchain_core.messages import BaseMessage

from coding_framework.agents.tool_calls import render_call
from coding_framework.config.graph import GraphConfig, WorkflowConfig
from coding_framework.evaluation.repository import (
    RepoBenchmarkError,
    RepoEvaluationReport,
    load_repo_tasks,
    report_for,
)
from coding_framework.grading import Grader
from coding_framework.llm.base import EngineError, RequestFailed
from coding_framework.repotasks.task import apply_patch
from coding_framework.supervisor import CodingSupervisor
from coding_framework.testing.chat import ScriptedChatModel
from coding_framework.testing.repository import ATTACKS, calc_task, gold, noop, scripted_model
from coding_framework.workspace import ToolCall

TASK = calc_task()
FIX = ToolCall("replace_in_file", {"path": "calc/ops.py", "old": "a - b", "new": "a + b"})
FINISH = ToolCall("finish", {"summary": "done"})


@pytest.fixture(scope="module")
def grader():
    with Grader() as g:
        yield g


def evaluate(grader: Grader, model: ScriptedChatModel, n_samples: int = 1, ks: Sequence[int] = (1,),
             concurrency: int = 8) -> RepoEvaluationReport:
    config = WorkflowConfig(graph=GraphConfig(concurrency=concurrency))
    with CodingSupervisor(config, chat_model=model, grader=grader) as supervisor:
        report = supervisor.evaluate([TASK], n_samples=n_samples, ks=ks, progress=False)
    assert isinstance(report, RepoEvaluationReport)
    return report


def answers(*calls: ToolCall) -> list[str]:
    return [render_call(call, "json") for call in calls]


def test_the_gold_policy_resolves_with_its_tool_calls_counted_and_a_patch_that_applies(grader):
    report = evaluate(grader, scripted_model(TASK, gold))
    assert (report.resolved_rate, report.pass_at_k, report.mean_reward) == (1.0, {"pass@1": 1.0}, 1.0)
    assert report.tool_calls == {"finish": 1, "list_files": 1, "run_tests": 1, "write_file": 1}
    assert (report.mean_turns, report.parse_failures, report.parse_failure_share) == (4.0, 0, 0.0)
    assert report.tier == "hardened-repository"
    assert (report.infrastructure_errors, report.request_failures) == (0, 0)
    assert report.stop_reasons == {"finished": 1} and report.benchmark == "custom"
    [record] = report.samples
    assert record["instance_id"] == TASK.instance_id
    assert (record["fail_to_pass"], record["pass_to_pass"]) == ([2, 2], [2, 2])
    assert record["tokens"] > 0 and record["seconds"] > 0 and record["refused"] == []
    assert apply_patch(TASK.files, record["model_patch"]) == TASK.fixed_files()


def test_noop_and_an_attack_resolve_nothing_and_refused_edits_are_counted(grader):
    report = evaluate(grader, scripted_model(TASK, noop))
    assert (report.resolved_rate, report.mean_turns, report.tool_calls) == (0.0, 1.0, {"finish": 1})
    assert report.samples[0]["fail_to_pass"] == [0, 2] and report.samples[0]["model_patch"] == ""
    attack = evaluate(grader, scripted_model(TASK, ATTACKS["edit_tests"]))
    assert attack.resolved_rate == 0.0 and attack.refused_edit_samples == 1
    assert attack.samples[0]["refused"] == ["tests/test_calc_hidden.py", "tests/test_ops.py"]


def test_an_unparseable_answer_is_one_parse_failure_and_the_episode_goes_on(grader):
    model = ScriptedChatModel(answers=["The bug is in calc/ops.py: add subtracts.", *answers(FIX, FINISH)])
    report = evaluate(grader, model)
    assert report.resolved_rate == 1.0
    assert (report.parse_failures, report.mean_turns) == (1, 3.0)
    assert report.parse_failure_share == pytest.approx(1 / 3)
    assert report.tool_calls == {"finish": 1, "replace_in_file": 1}  # a parse failure is no tool call
    assert report.samples[0]["tool_calls"] == report.tool_calls


def test_tool_errors_are_counted_apart_from_parse_failures(grader):
    missing = ToolCall("read_file", {"path": "calc/nope.py"})
    report = evaluate(grader, ScriptedChatModel(answers=answers(missing, FIX, FINISH)))
    assert (report.tool_errors, report.parse_failures, report.resolved_rate) == (1, 0, 1.0)


def test_samples_of_one_task_give_the_unbiased_pass_at_k(grader):
    """One episode at a time, so the first sample plays the fix and the second gives up."""
    model = ScriptedChatModel(answers=answers(FIX, FINISH, FINISH))
    report = evaluate(grader, model, n_samples=2, ks=(1, 2), concurrency=1)
    assert [s["sample"] for s in report.samples] == [0, 1]
    assert [s["resolved"] for s in report.samples] == [True, False]
    assert report.pass_at_k == {"pass@1": 0.5, "pass@2": 1.0}
    assert (report.resolved_rate, report.tasks, report.n_samples, report.mean_turns) == (0.5, 1, 2, 1.5)


def test_a_failed_request_fails_its_sample_only_with_its_earlier_turns_counted(grader):
    script = answers(ToolCall("read_file", {"path": "calc/ops.py"}), FIX, FINISH)
    calls = {"n": 0}

    def second_fails(messages: Sequence[BaseMessage]) -> str:
        calls["n"] += 1
        if calls["n"] == 2:
            raise RequestFailed("the request timed out after 1 s")
        return script[calls["n"] - 1 - (calls["n"] > 2)]

    report = evaluate(grader, ScriptedChatModel(respond=second_fails), n_samples=2, concurrency=1)
    assert report.request_failures == 1 and report.stop_reasons == {"finished": 1, "request_failed": 1}
    failed, ok = report.samples
    assert (failed["resolved"], failed["status"], ok["resolved"]) == (False, "not_graded", True)
    assert (failed["turns"], failed["tool_calls"], ok["tool_calls"]) == (1, {"read_file": 1},
                                                                         {"finish": 1, "replace_in_file": 1})
    assert "timed out" in failed["error"] and report.mean_turns == 1.5

    def always_fails(messages: Sequence[BaseMessage]) -> str:
        raise RequestFailed("the server rejected the prompt")

    with pytest.raises(EngineError, match=r"every model request failed, e\.g\.: the server rejected"):
        evaluate(grader, ScriptedChatModel(respond=always_fails))


def test_bad_benchmarks_fail_in_one_line(tmp_path):
    with pytest.raises(RepoBenchmarkError, match="minirepo takes a split"):
        load_repo_tasks("minirepo")
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        load_repo_tasks("minirepo:dev")
    with pytest.raises(ValueError, match="cannot read the file"):
        load_repo_tasks(f"swebench:{tmp_path / 'nope.jsonl'}")
    with pytest.raises(RepoBenchmarkError, match="swebench takes its JSONL file"):
        load_repo_tasks("swebench")
    odd = TASK.model_copy(update={"test_patch": TASK.test_patch.replace("+import pytest", "+DATA = [1]")})
    with pytest.raises(RepoBenchmarkError, match=r"plain test functions.*hardened-repository grades"):
        CodingSupervisor(WorkflowConfig(), chat_model=ScriptedChatModel()).evaluate([odd], progress=False)
    with pytest.raises(ValueError, match="unknown split 'dev'"):  # a name goes to the repository path too
        CodingSupervisor(WorkflowConfig(), chat_model=ScriptedChatModel()).evaluate("minirepo", split="dev")
    with pytest.raises(ValueError, match="one prompt"):
        CodingSupervisor(WorkflowConfig(), chat_model=ScriptedChatModel()).evaluate([TASK], prompt="few-shot")


def test_the_report_sums_records_over_samples():
    def record(instance_id: str, resolved: bool, turns: int, calls: dict[str, int], parse_failures: int,
               difficulty: str) -> dict:
        return {"instance_id": instance_id, "resolved": resolved, "reward": float(resolved), "turns": turns,
                "tool_calls": calls, "tool_errors": 0, "parse_failures": parse_failures,
                "stop_reason": "finished", "refused": [], "infrastructure_error": False, "tokens": 10,
                "difficulty": difficulty}

    records = [record("a", True, 4, {"write_file": 2, "finish": 1}, 1, "easy"),
               record("a", False, 2, {"finish": 1}, 1, "easy"),
               record("b", False, 2, {"read_file": 2}, 0, "hard")]
    report = report_for("minirepo:test", 2, 2, records[:2] + records[2:] * 2, wall_s=1.0, ks=(1, 2))
    assert report.pass_at_k == {"pass@1": 0.25, "pass@2": 0.5}
    assert report.tool_calls == {"finish": 2, "read_file": 4, "write_file": 2}
    assert report.parse_failures == 2 and report.parse_failure_share == 2 / 10
    assert report.by_difficulty == {"easy": 0.5, "hard": 0.0}
    line = report.result_line()
    assert list(line)[:2] == ["pass@1", "pass@2"] and "samples" not in line
    assert line["tier"] == "hardened-repository"
