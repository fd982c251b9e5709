from __future__ import annotations

import json

import pytest

from coding_framework.config.agents import AgentsConfig, ReviewerConfig
from coding_framework.config.graph import GraphConfig, WorkflowConfig
from coding_framework.grading import Grader
from coding_framework.llm.base import EngineError, RequestFailed
from coding_framework.problems import Problem, builtin_problems
from coding_framework.supervisor import CodingSupervisor, EvaluationIncomplete, SolveResult
from coding_framework.testing.chat import ScriptedChatModel, fenced
from coding_framework.testing.grader import InProcessGrader

ADD = Problem(
    task_id="t/add",
    prompt="Write add(a, b).",
    entry_point="add",
    prompt_is_code=False,
    test_code="assert add(1, 2) == 3\nassert add(0, 0) == 0\n",
    source="test",
)
SUB = Problem(
    task_id="t/sub",
    prompt="Write sub(a, b).",
    entry_point="sub",
    prompt_is_code=False,
    test_code="assert sub(3, 2) == 1\n",
    source="test",
)


def _config(**graph) -> WorkflowConfig:
    return WorkflowConfig(
        agents=AgentsConfig(reviewer=ReviewerConfig(backend="none")), graph=GraphConfig(**graph)
    )


def test_solve_a_problem_returns_code_verdict_rounds_and_feedback() -> None:
    model = ScriptedChatModel(
        answers=[fenced("def add(a, b):\n    return 0"), fenced("def add(a, b):\n    return a + b")]
    )
    with CodingSupervisor(_config(), chat_model=model, grader=InProcessGrader()) as sup:
        result = sup.solve(ADD)
    assert isinstance(result, SolveResult)
    assert (result.passed, result.rounds, result.stop_reason, result.task_id) == (True, 2, "passed", "t/add")
    assert result.code == "def add(a, b):\n    return a + b\n"
    assert result.feedback[0].startswith("1/2 tests passed. First failure: test 1")
    assert result.feedback[1] == "All 2 tests passed."
    assert result.tokens_used > 0 and result.thread_id is None


def test_solve_free_text_never_passes() -> None:
    model = ScriptedChatModel(answers=[fenced("def solution(s):\n    return s[::-1]")])
    result = CodingSupervisor(_config(), chat_model=model, grader=InProcessGrader()).solve(
        "Reverse a string."
    )
    assert result.passed is False
    assert result.stop_reason == "untested"
    assert "no tests" in result.feedback[0]


def test_solve_refuses_other_inputs() -> None:
    with pytest.raises(TypeError, match="a Problem or a problem statement"):
        CodingSupervisor(_config(), chat_model=ScriptedChatModel(), grader=InProcessGrader()).solve(42)  # type: ignore[arg-type]


async def test_solve_works_inside_a_running_event_loop() -> None:
    model = ScriptedChatModel(answers=[fenced("def add(a, b):\n    return a + b")])
    assert CodingSupervisor(_config(), chat_model=model, grader=InProcessGrader()).solve(ADD).passed


def test_checkpointed_runs_can_be_inspected_and_resumed(tmp_path) -> None:
    config = _config(checkpoint_db=tmp_path / "ckpt.sqlite")
    crashing = ScriptedChatModel(answers=[fenced("def add(a, b):\n    return 0")] * 2, fail_on_call=1)
    with pytest.raises(RuntimeError, match="scripted failure"):
        CodingSupervisor(config, chat_model=crashing, grader=InProcessGrader()).solve(ADD, thread_id="run-7")
    sup = CodingSupervisor(
        config,
        chat_model=ScriptedChatModel(answers=[fenced("def add(a, b):\n    return a + b")]),
        grader=InProcessGrader(),
    )
    before = sup.inspect("run-7")
    assert before[-1]["next"] == ["generate"] and before[-1]["values"]["round"] == 1
    result = sup.resume("run-7")
    assert (result.passed, result.rounds, result.thread_id) == (True, 2, "run-7")
    assert sup.inspect("run-7")[-1]["next"] == []


def test_resume_without_checkpoints_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"set graph\.checkpoint_db"):
        CodingSupervisor(_config(), chat_model=ScriptedChatModel(), grader=InProcessGrader()).resume("x")


def test_evaluate_computes_pass_at_k_from_final_grading(tmp_path) -> None:
    # add is always right; sub is right on every other call, so c = 1 of n = 2 for it.
    calls = {"sub": 0}

    def respond(messages):
        if "sub(" in messages[1].content:
            calls["sub"] += 1
            body = "a - b" if calls["sub"] % 2 else "a + b"
            return fenced(f"def sub(a, b):\n    return {body}")
        return fenced("def add(a, b):\n    return a + b")

    sup = CodingSupervisor(
        _config(max_rounds=1), chat_model=ScriptedChatModel(respond=respond), grader=InProcessGrader()
    )
    report = sup.evaluate([ADD, SUB], n_samples=2, ks=(1, 2), progress=False)
    assert report.problems == 2 and report.n_samples == 2 and len(report.samples) == 4
    assert report.pass_at_k == {"pass@1": pytest.approx((1.0 + 0.5) / 2), "pass@2": pytest.approx(1.0)}
    assert report.by_family == {"test": 0.75}
    assert report.feedback_from_tests is False and report.agreement == 1.0
    path = report.write_samples(tmp_path / "samples.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["task_id"] for r in rows] == ["t/add", "t/add", "t/sub", "t/sub"]
    assert rows[0]["completion"] == "def add(a, b):\n    return a + b\n"


@pytest.mark.slow  # opens a SQLite MLflow store
def test_evaluate_records_every_function_episode_as_a_trace(tmp_path) -> None:
    from mlflow import MlflowClient

    from coding_framework.evaluation.traces import TraceRecorder

    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    sup = CodingSupervisor(_config(max_rounds=1), chat_model=ScriptedChatModel(
        respond=lambda m: fenced("def add(a, b):\n    return a + b")), grader=InProcessGrader())
    with TraceRecorder(uri=store, experiment="evaluation") as recorder:
        sup.evaluate([ADD], n_samples=2, progress=False, traces=recorder)
    client = MlflowClient(store)
    traces = client.search_traces(locations=[client.get_experiment_by_name("evaluation").experiment_id])
    assert [(t.info.tags["kind"], t.info.tags["task_id"], t.info.tags["passed"]) for t in traces] == \
        [("function", "t/add", "true")] * 2


def test_evaluate_that_fails_midway_keeps_the_graded_episodes_that_ended() -> None:
    def respond(messages):
        if "sub(" in messages[1].content:
            raise EngineError("could not reach vLLM")
        return fenced("def add(a, b):\n    return a + b")

    sup = CodingSupervisor(
        _config(max_rounds=1, concurrency=1), chat_model=ScriptedChatModel(respond=respond),
        grader=InProcessGrader(),
    )
    with pytest.raises(EvaluationIncomplete, match="could not reach vLLM") as caught:
        sup.evaluate([ADD, SUB], n_samples=2, ks=(1,), progress=False)
    assert caught.value.total == 4
    report = caught.value.report
    assert [r["task_id"] for r in report.samples] == ["t/add", "t/add"]
    assert report.problems == 1 and report.pass_at_k == {"pass@1": 1.0}


def test_a_request_that_fails_alone_fails_its_sample_and_the_rest_go_on() -> None:
    def respond(messages):
        if "sub(" in messages[1].content:
            raise RequestFailed("vLLM did not answer POST /chat/completions within 0.2 s")
        return fenced("def add(a, b):\n    return a + b")

    sup = CodingSupervisor(_config(max_rounds=1), chat_model=ScriptedChatModel(respond=respond),
                           grader=InProcessGrader())
    report = sup.evaluate([ADD, SUB], n_samples=2, ks=(1,), progress=False)
    assert report.request_failures == 2 and report.pass_at_k == {"pass@1": 0.5}
    assert [(s["task_id"], s["stop_reason"], s["extracted"]) for s in report.samples] == [
        ("t/add", "passed", True), ("t/add", "passed", True),
        ("t/sub", "request_failed", False), ("t/sub", "request_failed", False),
    ]
    assert report.extracted_share == 0.5 and report.truncated_share == 0.0

    def always(messages):
        raise RequestFailed("rejected POST /chat/completions (400): maximum context length")

    sup = CodingSupervisor(_config(max_rounds=1), chat_model=ScriptedChatModel(respond=always),
                           grader=InProcessGrader())
    with pytest.raises(EngineError, match=r"every model request failed, e\.g\.: rejected"):
        sup.evaluate([ADD], progress=False)


def test_evaluate_validates_its_arguments() -> None:
    sup = CodingSupervisor(_config(), chat_model=ScriptedChatModel(), grader=InProcessGrader())
    with pytest.raises(ValueError, match="n_samples"):
        sup.evaluate([ADD], n_samples=0)
    with pytest.raises(ValueError, match="limit"):
        sup.evaluate([ADD], limit=0)


@pytest.mark.slow
def test_evaluate_a_named_benchmark_with_the_real_grader() -> None:
    """References answered by the model must all pass the sandboxed grading: pass@1 = 1."""
    problems = {p.prompt.strip(): p for p in builtin_problems()[:4]}

    def respond(messages):
        text = messages[1].content
        problem = next(p for prompt, p in problems.items() if prompt in text)
        return fenced(problem.solutions[0])

    with Grader() as grader:
        sup = CodingSupervisor(
            _config(max_rounds=1), chat_model=ScriptedChatModel(respond=respond), grader=grader
        )
        report = sup.evaluate("builtin", limit=4, ks=(1,), progress=False)
    assert report.benchmark == "builtin" and report.problems == 4
    assert report.pass_at_k == {"pass@1": 1.0}
    assert all(s["passed"] for s in report.samples)


def test_train_agents_takes_the_verl_route_and_solve_uses_its_model(tmp_path, monkeypatch) -> None:
    """``backend="verl"`` hands the config and the device's verl settings to ``run_verl`` (its real run is
    tests/training/verl/test_cpu_train.py); ``solve`` then runs the final model it returned."""
    from coding_framework.config.training import TrainingConfig
    from coding_framework.testing.models import tiny_model_dir
    from coding_framework.training.run.results import TrainingResults
    from coding_framework.training.verl import run as verl_run

    final = tiny_model_dir(tmp_path / "final_model")
    seen = {}

    def fake_run_verl(cfg, verl, run_dir, *, resume=False):
        seen.update(cfg=cfg, verl=verl, run_dir=run_dir, resume=resume)
        return TrainingResults(algorithm=cfg.algorithm, seed=cfg.seed, steps=cfg.steps, run_dir=run_dir,
                               final_metrics={}, history=[], heldout_problems=0, final_model_dir=final,
                               seconds=0.0)

    monkeypatch.setattr(verl_run, "run_verl", fake_run_verl)
    workflow = WorkflowConfig(graph=GraphConfig(max_rounds=1, review="never"))
    with CodingSupervisor(workflow) as supervisor:
        results = supervisor.train_agents(config=TrainingConfig(device="cpu", steps=1, workflow=workflow),
                                          run_dir=tmp_path / "run", backend="verl")
        assert results.final_model_dir == final
        assert seen["verl"].cluster.gpus_per_node == 1  # verl_fsdp_cpu, the CPU default
        assert seen["run_dir"] == tmp_path / "run" and seen["resume"] is False
        assert str(supervisor.config.agents.model) == f"local:{final}"
        solved = supervisor.solve(builtin_problems()[0], seed=0)
        assert solved.rounds == 1  # the tiny model answered (noise), through the local engine
    with CodingSupervisor(workflow) as supervisor, pytest.raises(ValueError, match="'tinker' is not one of"):
        supervisor.train_agents(config=TrainingConfig(steps=1), backend="tinker")  # type: ignore[arg-type]
