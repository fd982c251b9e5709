"""Episodes recorded as MLflow traces into a real SQLite store, then read back through MlflowClient."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from mlflow.entities import SpanStatusCode

from coding_framework.agents.repository import RepositoryAgent
from coding_framework.agents.tool_calls import render_call
from coding_framework.config.agents import AgentsConfig, ReviewerConfig
from coding_framework.config.graph import GraphConfig, WorkflowConfig
from coding_framework.config.repository import RepositoryConfig
from coding_framework.evaluation.traces import (
    TraceError,
    TraceRecorder,
    build_episode_trace,
    record_episode_trace,
    sample_for_tracing,
)
from coding_framework.grading import Grader
from coding_framework.graphs import build_inference_graph, build_training_graph
from coding_framework.graphs.repository import build_repository_graph
from coding_framework.models.registry import mlflow_client
from coding_framework.problems import Problem
from coding_framework.testing.chat import ScriptedChatModel, fenced
from coding_framework.testing.engine import ScriptedEngine
from coding_framework.testing.grader import InProcessGrader
from coding_framework.testing.repository import calc_task, edit_tests, gold, scripted_model

ADD = Problem(
    task_id="t/add", prompt="Write a function add(a, b) that returns a + b.", entry_point="add",
    test_code="assert add(1, 2) == 3\nassert add(-1, 1) == 0\nassert add(2, 2) == 4\n", prompt_is_code=False,
)
WRONG = fenced("def add(a, b):\n    return a - b")
RIGHT = fenced("def add(a, b):\n    return a + b")
REVIEW = "- subtracts instead of adding"


@pytest.fixture(scope="module")
def uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    uri = f"sqlite:///{tmp_path_factory.mktemp('traces') / 'mlflow.db'}"
    mlflow_client(uri).search_experiments()  # creates the store's tables once for the module
    return uri


@pytest.fixture(scope="module")
def repository_states() -> dict[str, dict[str, Any]]:
    """A training episode (token records; an unparseable first answer, then the gold patch) and an
    evaluation episode that rewrites the tests, both through the real graph and the real grader."""
    task = calc_task()
    with Grader() as grader:
        answers = ["The bug is in add.", *(render_call(c, "json") for c in gold(task))]
        engine = ScriptedEngine(answers=answers, policy_version="7")
        trained = RepositoryAgent(RepositoryConfig(sampling={"max_new_tokens": 512}), engine=engine)
        attack = RepositoryAgent(RepositoryConfig(), chat_model=scripted_model(task, edit_tests))
        return {
            name: asyncio.run(build_repository_graph(agent, grader).ainvoke({"task": task.model_dump()}))
            for name, agent in (("gold", trained), ("edit_tests", attack))
        }


def _reviewed() -> WorkflowConfig:
    return WorkflowConfig(agents=AgentsConfig(reviewer=ReviewerConfig(backend="llm")),
                          graph=GraphConfig(max_rounds=2, review="on_failure"))


@pytest.fixture(scope="module")
def function_state() -> dict[str, Any]:
    """A training episode: a wrong draft, an LLM review on the Generator's engine, a right revision."""
    graph = build_training_graph(_reviewed(), grader=InProcessGrader(),
                                 engine=ScriptedEngine([WRONG, REVIEW, RIGHT], policy_version="3"))
    state: dict[str, Any] = asyncio.run(graph.ainvoke({"problem": ADD.model_dump()}))
    return state


def _spans(uri: str, trace_id: str) -> list[Any]:
    """The trace's spans in episode order, the root first."""
    trace = mlflow_client(uri).get_trace(trace_id)
    return sorted(trace.data.spans, key=lambda s: (s.start_time_ns, s.parent_id is not None))


@pytest.mark.slow  # the module's MLflow SQLite store takes seconds to create
def test_a_repository_episode_reads_back_one_span_per_call_tool_and_grade(uri, repository_states):
    state = repository_states["gold"]
    client = mlflow_client(uri)
    experiment = client.create_experiment("training-run")
    run_id = client.create_run(experiment).info.run_id
    trace_id = record_episode_trace(state, kind="repository", mode="training", step=3, uri=uri, run_id=run_id)

    spans = _spans(uri, trace_id)
    exchanges, calls = state["exchanges"], state["calls"]
    assert [s.name for s in spans] == [
        "repository_episode", "generator", "parse_error", "generator", "list_files", "generator",
        "write_file", "generator", "run_tests", "generator", "finish", "grade",
    ]
    assert len(spans) == 1 + len(calls) + len(exchanges) + 1
    root, *children = spans
    assert all(s.parent_id == root.span_id for s in children)
    assert root.inputs["instance_id"] == "calc__ops__add"
    assert root.outputs == {"resolved": True, "reward": 1.0, "stop_reason": "finished", "turns": 5,
                            "tokens_used": state["tokens_used"]}

    models, tools = children[0:-1:2], children[1:-1:2]
    for turn, (model, tool, call, exchange) in enumerate(zip(models, tools, calls, exchanges, strict=True)):
        assert model.span_type == "LLM" and model.outputs == exchange["text"] == call["text"]
        assert model.inputs["prompt_tokens"] == len(call["prompt_ids"])
        read = state["opening"] if turn == 0 else exchanges[turn - 1]["observation"]
        assert model.inputs["new_messages"] == read
        attrs = model.attributes
        assert (attrs["role"], attrs["turn"], attrs["policy_version"], attrs["stop_reason"]) == (
            "generator", turn, "7", "eos")
        assert (attrs["prompt_tokens"], attrs["response_tokens"]) == (len(call["prompt_ids"]),
                                                                      len(call["response_ids"]))
        assert "prompt_ids" not in json.dumps(model.to_dict())  # counts, never the ids
        assert tool.span_type == "TOOL"
        assert tool.inputs == {"tool": exchange["tool"], "arguments": exchange["arguments"]}
        assert tool.outputs == {"observation": exchange["observation"][0]["content"]}
        assert (tool.attributes["ok"], tool.attributes["parse_error"]) == (exchange["ok"],
                                                                          exchange["parse_error"])
    assert tools[0].status.status_code == SpanStatusCode.ERROR and "no tool call" in tools[0].attributes[
        "parse_error"]
    assert tools[2].inputs["arguments"]["path"] == "calc/ops.py"
    assert "return a + b" in tools[2].inputs["arguments"]["content"]

    grade = children[-1]
    assert grade.span_type == "EVALUATOR" and grade.outputs == state["verdict"]
    assert grade.inputs == {"changed_files": state["changed"]}
    assert (grade.attributes["fail_to_pass"], grade.attributes["pass_to_pass"], grade.attributes["refused"],
            grade.attributes["tier"]) == ("2/2", "2/2", [], "hardened-repository")

    info = client.get_trace(trace_id).info
    assert info.experiment_id == experiment  # the run's experiment
    assert {k: info.tags[k] for k in ("task_id", "kind", "mode", "step", "passed", "resolved")} == {
        "task_id": "calc__ops__add", "kind": "repository", "mode": "training", "step": "3",
        "passed": "true", "resolved": "true"}
    usage = json.loads(info.trace_metadata["mlflow.trace.tokenUsage"])
    assert usage["output_tokens"] == sum(len(c["response_ids"]) for c in calls)
    found = client.search_traces(locations=[experiment], run_id=run_id,
                                 filter_string="tags.kind = 'repository' AND tags.resolved = 'true'")
    assert [t.info.trace_id for t in found] == [trace_id]


@pytest.mark.slow  # the module's MLflow SQLite store takes seconds to create
def test_refused_test_edits_show_in_the_grading_span(uri, repository_states):
    state = repository_states["edit_tests"]
    trace_id = record_episode_trace(state, kind="repository", mode="evaluation", experiment="evals", uri=uri)

    client = mlflow_client(uri)
    spans = _spans(uri, trace_id)
    grade = spans[-1]
    assert grade.name == "grade" and grade.attributes["resolved"] is False
    assert grade.attributes["refused"] == state["verdict"]["refused"] and grade.attributes["refused"]
    model = spans[1]
    assert model.name == "generator" and "prompt_tokens" not in model.attributes  # a chat model keeps none
    assert len(spans) == 1 + 2 * len(state["exchanges"]) + 1
    info = client.get_trace(trace_id).info
    assert info.experiment_id == client.get_experiment_by_name("evals").experiment_id
    assert (info.tags["mode"], info.tags["passed"], info.tags["resolved"]) == ("evaluation", "false", "false")
    assert "step" not in info.tags


@pytest.mark.slow  # the module's MLflow SQLite store takes seconds to create
def test_a_function_episode_has_a_span_per_generation_execution_and_review(uri, function_state):
    state = function_state
    trace_id = record_episode_trace(state, kind="function", mode="training", step=0, uri=uri, reward=1.0,
                                    experiment="function-runs")

    spans = _spans(uri, trace_id)
    assert [s.name for s in spans] == ["function_episode", "generator", "execute", "reviewer", "generator",
                                       "execute"]
    root, draft, failed, review, revision, passed = spans
    assert root.inputs == {"task_id": "t/add", "prompt": ADD.prompt}
    assert (root.outputs["passed"], root.outputs["rounds"], root.outputs["reward"]) == (True, 2, 1.0)
    first, second = state["calls"]
    assert draft.inputs == {"problem": ADD.prompt, "prompt_tokens": len(first["prompt_ids"])}
    assert draft.outputs == state["rounds"][0]["answer"]
    assert (draft.attributes["turn"], draft.attributes["policy_version"]) == (0, "3")
    assert failed.outputs["tests_passed"] == 0 and failed.outputs["tests_total"] == 3
    assert failed.inputs == {"code": "def add(a, b):\n    return a - b\n"}
    assert (failed.attributes["passed"], failed.attributes["status"]) == (False, "failed")
    (reviewed,) = state["review_calls"]
    assert review.span_type == "LLM" and review.outputs == REVIEW
    assert (review.attributes["role"], review.attributes["response_tokens"]) == (
        "reviewer", len(reviewed["response_ids"]))
    assert REVIEW in revision.inputs["feedback"]  # what the Generator read before revising
    assert revision.attributes["prompt_tokens"] == len(second["prompt_ids"])
    assert (passed.outputs["tests_passed"], passed.outputs["passed"]) == (3, True)
    tags = mlflow_client(uri).get_trace(trace_id).info.tags
    assert (tags["task_id"], tags["kind"], tags["step"], tags["passed"], tags["reward"]) == (
        "t/add", "function", "0", "true", "1")


def test_a_state_that_is_not_a_finished_episode_is_refused_in_one_line(tmp_path, repository_states,
                                                                        function_state):
    store = tmp_path / "mlflow.db"
    uri = f"sqlite:///{store}"
    unfinished = {k: v for k, v in repository_states["gold"].items() if k != "verdict"}
    with pytest.raises(TraceError, match="has `verdict`"):
        record_episode_trace(unfinished, kind="repository", mode="evaluation", uri=uri)
    with pytest.raises(TraceError, match="has `task`"):
        record_episode_trace(function_state, kind="repository", mode="training", uri=uri)
    short = {**function_state, "calls": function_state["calls"][:1]}
    with pytest.raises(TraceError, match="1 call records in `calls` for 2 rounds"):
        record_episode_trace(short, kind="function", mode="training", uri=uri)
    with pytest.raises(TraceError, match="unknown mode"):
        record_episode_trace(function_state, kind="function", mode="serving", uri=uri)  # type: ignore[arg-type]
    assert not store.exists()  # refused before any store is opened


def test_an_inference_episode_keeps_what_its_state_has_without_call_records():
    graph = build_inference_graph(_reviewed(), grader=InProcessGrader(),
                                  chat_model=ScriptedChatModel(answers=[WRONG, RIGHT]),
                                  reviewer_model=ScriptedChatModel(answers=[REVIEW]))
    state = asyncio.run(graph.ainvoke({"problem": ADD.model_dump()}))
    built = build_episode_trace(state, kind="function", mode="evaluation")
    assert [(c.name, c.span_type) for c in built.children] == [
        ("generator", "LLM"), ("execute", "TOOL"), ("reviewer", "AGENT"), ("generator", "LLM"),
        ("execute", "TOOL")]
    draft = built.children[0]
    assert draft.inputs == {"problem": ADD.prompt}  # no record: no prompt token count
    assert draft.attributes == {"role": "generator", "turn": 0,
                                "response_tokens": state["rounds"][0]["completion_tokens"]}
    assert built.children[2].outputs == REVIEW
    assert built.tags == {"task_id": "t/add", "passed": "true", "kind": "function", "mode": "evaluation",
                          "stop_reason": "passed"}


@pytest.mark.slow  # the module's MLflow SQLite store takes seconds to create
def test_the_recorder_writes_a_steps_sample_in_the_background(uri, function_state):
    picked = sample_for_tracing(8, step=4, every=2, per_step=3, seed=0)
    with TraceRecorder(uri=uri, experiment="sampled") as recorder:
        futures = [recorder.submit(function_state, kind="function", mode="training", step=4,
                                   tags={"episode": str(i)}) for i in picked]
    ids = [f.result() for f in futures]
    client = mlflow_client(uri)
    experiment = client.get_experiment_by_name("sampled").experiment_id
    found = client.search_traces(locations=[experiment], filter_string="tags.step = '4'")
    assert sorted(t.info.trace_id for t in found) == sorted(ids)
    assert sorted(t.info.tags["episode"] for t in found) == sorted(str(i) for i in picked)


def test_a_failed_write_is_logged_and_the_run_goes_on(tmp_path, function_state, capsys):
    (tmp_path / "file").write_text("not a folder")
    uri = f"sqlite:///{tmp_path / 'file' / 'mlflow.db'}"  # a store that cannot be created
    with TraceRecorder(uri=uri) as recorder:
        future = recorder.submit(function_state, kind="function", mode="training", step=1)
    assert future.result() is None
    assert "episode_trace_not_recorded" in capsys.readouterr().err
    with pytest.raises(TraceError, match="unknown episode kind"):  # a malformed call fails at once
        TraceRecorder(uri=uri).submit(function_state, kind="contest", mode="training")  # type: ignore[arg-type]


def test_a_sample_is_drawn_on_every_nth_step_the_same_way_each_time():
    picked = sample_for_tracing(64, step=10, every=5, per_step=4, seed=1)
    assert len(picked) == 4 and picked == sorted(set(picked)) and all(0 <= i < 64 for i in picked)
    assert sample_for_tracing(64, step=10, every=5, per_step=4, seed=1) == picked
    draws = {tuple(sample_for_tracing(64, step=s, every=1, per_step=4, seed=1)) for s in range(5)}
    assert len(draws) > 1  # steps draw different episodes
    assert sample_for_tracing(64, step=11, every=5, per_step=4, seed=1) == []
    assert sample_for_tracing(3, step=0, every=1, per_step=8, seed=1) == [0, 1, 2]
    assert sample_for_tracing(64, step=0, every=0, per_step=4, seed=1) == []
    with pytest.raises(TraceError, match="non-negative"):
        sample_for_tracing(64, step=0, every=-1, per_step=4, seed=1)
