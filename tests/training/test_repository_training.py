"""Training on repository tasks: token-exact rows from the repository graph, infrastructure failures masked
and counted, the config and data path, and a whole Trainer run."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml
from mlflow import MlflowClient
from pydantic import ValidationError

from coding_framework.agents.tool_calls import format_for, render_call
from coding_framework.config import ConfigError, load_config
from coding_framework.config.graph import WorkflowConfig
from coding_framework.config.training import TrainingConfig
from coding_framework.embedded.architecture import init_model
from coding_framework.grading import Grader
from coding_framework.llm.base import Generation, SamplingParams
from coding_framework.llm.local import LocalEngine
from coding_framework.problems import Problem
from coding_framework.repotasks import RepoTask
from coding_framework.repotasks.minirepo import write_minirepos
from coding_framework.sandbox import ExecutionResult
from coding_framework.testing.engine import ScriptedEngine, tiny_tokenizer
from coding_framework.testing.models import TINY
from coding_framework.testing.repository import calc_task, gold, noop
from coding_framework.testing.tiny_run import tiny_config
from coding_framework.training.algos.algorithms import get_algorithm
from coding_framework.training.algos.losses import compute_advantages
from coding_framework.training.auditor import audit
from coding_framework.training.batch import TrajectoryBatch, last_token_rewards
from coding_framework.training.rollouts.engines.pipeline import RolloutJob
from coding_framework.training.rollouts.episodes import current_episode, step_workflow
from coding_framework.training.rollouts.repository import collect_repository
from coding_framework.training.rollouts.scoring import rollout_metrics, to_trajectories, trained_episodes
from coding_framework.training.run.data import prepare_data
from coding_framework.training.trainer import Trainer

FORMAT = format_for(tiny_tokenizer())


@pytest.fixture(scope="module")
def grader():
    with Grader() as g:
        yield g


def _workflow(max_new_tokens: int = 512, **repository: Any) -> WorkflowConfig:
    base = WorkflowConfig()
    base = base.model_copy(update={"repository": base.repository.model_copy(update=repository)})
    return step_workflow(base, max_new_tokens=max_new_tokens, temperature=1.0, top_p=1.0)


def _turn(prompt_ids: Sequence[int]) -> int:
    return tiny_tokenizer().decode(list(prompt_ids)).count("<|im_start|>assistant") - 1


class PolicyByRow(ScriptedEngine):
    """Plays ``gold`` in the first ``gold_rows`` episodes and ``noop`` in the rest. A lockstep wave lists its
    episodes in index order, and the no-op episodes end at their first turn, so a later wave's rows are
    all gold episodes."""

    def __init__(self, task: RepoTask, gold_rows: int) -> None:
        super().__init__()
        self.gold = [render_call(c, FORMAT) for c in gold(task)]
        self.noop = [render_call(c, FORMAT) for c in noop(task)]
        self.gold_rows = gold_rows

    def generate_batch(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[Generation]:
        out = []
        for row, prompt in enumerate(prompts):
            turn = _turn(prompt)
            text = self.gold[turn] if turn > 0 or row < self.gold_rows else self.noop[turn]
            self.respond = lambda _prompt, text=text: text
            out.append(self.generate(prompt, params))
        return out


class FlakySandbox:
    """A grader whose hidden-test run raises in episode ``raises`` and reports an infrastructure error in
    episode ``infra``; every other call is graded for real."""

    def __init__(self, grader: Grader, task: RepoTask, raises: int, infra: int) -> None:
        self.grader, self.task, self.raises, self.infra = grader, task, raises, infra

    async def agrade(self, problem: Problem, program: str) -> ExecutionResult:
        hidden = problem.task_id == self.task.instance_id
        if hidden and current_episode() == self.raises:
            raise RuntimeError("worker lost")
        if hidden and current_episode() == self.infra:
            return ExecutionResult(passed=False, status="error", error_type="SandboxInfrastructureError",
                                   error_message="engine restarted")
        return await self.grader.agrade(problem, program)


def test_repository_rows_are_the_recorded_calls_with_the_tool_observations_as_mask_0(grader) -> None:
    task = calc_task()
    engine = ScriptedEngine(respond=lambda prompt: [render_call(c, FORMAT) for c in gold(task)][
        prompt.count("<|im_start|>assistant") - 1])
    batch = asyncio.run(collect_repository(engine, _workflow(), grader, [task], 2, seed=0))
    assert [(e.group, e.passed, e.reward.value, e.masked) for e in batch.episodes] == \
        [(0, True, 1.0, None)] * 2
    rows = to_trajectories(batch.episodes, [1.0, -1.0], ["generator"], step=5)
    assert [(r.task_id, r.group_id, r.reward) for r in rows] == [("calc__ops__add", "5/0", 1.0),
                                                                  ("calc__ops__add", "5/0", -1.0)]
    for row, episode in zip(rows, batch.episodes, strict=True):
        calls = episode.state["calls"]
        assert row.num_turns == len(calls) == len(gold(task))
        generated = [t for t, m in zip(row.response_ids, row.response_mask, strict=True) if m]
        assert generated == [t for call in calls for t in call["response_ids"]]
        assert [lp for lp, m in zip(row.response_logprobs, row.response_mask, strict=True) if m] == \
            pytest.approx([lp for call in calls for lp in call["logprobs"]])
        ids = row.ids
        for call in calls:  # each call read exactly the ids before it, observations included
            assert ids[: len(call["prompt_ids"])] == call["prompt_ids"]
        observed = [t for t, m in zip(row.response_ids, row.response_mask, strict=True) if not m]
        text = engine.tokenizer.decode(observed)
        assert "calc/ops.py" in text and "1 passed, 0 failed" in text  # list_files' and run_tests' output
    metrics = rollout_metrics(batch, ["read_file", "finish"])
    assert metrics["rollout/infra_masked"] == 0 and metrics["rollout/resolved_rate"] == 1.0
    assert metrics["rollout/turns_mean"] == len(gold(task)) and metrics["rollout/parse_failures"] == 0
    assert {k: v for k, v in metrics.items() if k.startswith("tools/")} == {  # tools offered count if unused
        "tools/finish": 2.0, "tools/list_files": 2.0, "tools/read_file": 0.0, "tools/run_tests": 2.0,
        "tools/write_file": 2.0}


def test_infrastructure_failures_are_masked_out_of_their_group_and_counted(grader) -> None:
    task = calc_task()
    sandbox = FlakySandbox(grader, task, raises=1, infra=3)
    batch = asyncio.run(collect_repository(PolicyByRow(task, gold_rows=2), _workflow(), sandbox,  # type: ignore[arg-type]
                                           [task], 4, seed=0))
    episodes = batch.episodes
    assert [e.masked is None for e in episodes] == [True, False, True, False]
    assert "RuntimeError: worker lost" in str(episodes[1].masked)
    assert "engine restarted" in str(episodes[3].masked)
    assert [(e.passed, e.reward.value) for e in trained_episodes(episodes)] == [(True, 1.0), (False, 0.0)]
    metrics = rollout_metrics(batch)
    assert metrics["rollout/infra_masked"] == 2 and metrics["episodes"] == 4
    assert metrics["reward_mean"] == 0.5 and metrics["pass_rate"] == metrics["rollout/resolved_rate"] == 0.5
    assert metrics["rollout/turns_mean"] == (len(gold(task)) + 1) / 2
    trained = trained_episodes(episodes)
    rows = to_trajectories(episodes, [e.reward.value for e in episodes], ["generator"], step=0)
    assert [r.metadata["episode"] for r in rows] == [0, 2] and {r.group_id for r in rows} == {"0/0"}
    assert rows == to_trajectories(trained, [e.reward.value for e in trained], ["generator"], step=0)
    # The group's advantages are those of its two trained episodes alone: +a for the pass, -a for the fail.
    tb = TrajectoryBatch.from_trajectories(rows, pad_id=0)
    token_rewards = last_token_rewards(tb, torch.tensor([r.reward for r in rows]))
    advantages, _ = compute_advantages(get_algorithm("grpo"), token_rewards, tb.response_mask,
                                       [r.group_id for r in rows])
    first, second = (advantages[i][tb.response_mask[i].bool()] for i in range(2))
    a = float(first[0])
    assert a > 0 and torch.allclose(first, torch.full_like(first, a))
    assert torch.allclose(second, torch.full_like(second, -a))


def test_repository_rows_sampled_by_a_real_model_pass_the_audit(grader) -> None:
    tokenizer = tiny_tokenizer()
    engine = LocalEngine(init_model(TINY, tokenizer, 0), tokenizer, device="cpu")
    wf = _workflow(max_new_tokens=12, max_turns=3)
    batch = asyncio.run(collect_repository(engine, wf, grader, [calc_task()], 2, seed=3))
    rows = to_trajectories(batch.episodes, [0.0, 0.0], ["generator"], step=0)
    assert len(rows) == 2 and all(r.num_turns == 3 for r in rows)
    assert all(0 in r.response_mask[r.calls[0].end:] for r in rows)  # observations between the turns
    report = audit(rows, engine.model, tokenizer, tolerance=1e-3)
    assert report.passed and report.offending_tokens == 0
    assert report.checked_tokens == sum(r.num_generated for r in rows)


def test_a_rollout_job_of_repository_tasks_survives_a_checkpoint() -> None:
    job = RolloutJob(step=3, version=2, problems=[calc_task()], temperature=0.7)
    again = RolloutJob.from_json(json.loads(json.dumps(job.to_json())))
    assert again == job and isinstance(again.problems[0], RepoTask)


# -- config and data ---------------------------------------------------------------------------------------


def _variant(name: str) -> RepoTask:
    return calc_task().model_copy(update={"instance_id": f"calc__{name}"})


def _task_set(tmp: Path) -> Path:
    path = tmp / "repos.jsonl.gz"
    write_minirepos({"train": [_variant("a"), _variant("b")], "validation": [_variant("c")]}, path)
    return path


@pytest.mark.parametrize(("config", "named"), [
    ({"data": {"repository": {}, "train": ["mbpp:train"]}}, "data.train"),
    ({"data": {"repository": {}}, "warm_start": {"enabled": True}}, "warm_start.enabled"),
    ({"data": {"repository": {}}, "rollout": {"trained_roles": ["generator", "reviewer"]}}, "trained_roles"),
])
def test_a_repository_run_refuses_what_only_problem_runs_have(config: dict[str, Any], named: str) -> None:
    with pytest.raises(ValidationError, match=named):
        TrainingConfig.model_validate(config)


def test_repository_data_is_loaded_by_benchmark_name_and_checked(tmp_path: Path) -> None:
    file = _task_set(tmp_path)
    config = TrainingConfig.model_validate({"data": {"repository": {"minirepo_file": str(file)}},
                                            "rollout": {"problems_per_step": 4}})
    data = prepare_data(config)
    assert data.repository is not None and data.train == [] and data.heldout == []
    assert [t.instance_id for t in data.tasks] == ["calc__a", "calc__b"]
    assert [t.instance_id for t in data.repository.heldout] == ["calc__c"]
    assert data.manifest["kind"] == "repository" and data.problems_per_step == 2  # capped at the tasks
    overlapping = config.model_copy(deep=True)
    assert overlapping.data.repository is not None
    overlapping.data.repository.heldout = "minirepo:train"
    with pytest.raises(ConfigError, match="overlaps the training set"):
        prepare_data(overlapping)
    unknown = config.model_copy(deep=True)
    assert unknown.data.repository is not None
    unknown.data.repository.heldout = "minirepo:nope"
    with pytest.raises(ConfigError, match=r"^data\.repository: unknown split 'nope'[^\n]*$"):
        prepare_data(unknown)


@pytest.mark.slow
def test_a_trainer_run_on_repository_tasks(tmp_path: Path) -> None:
    file = _task_set(tmp_path)
    path = tiny_config(
        tmp_path, steps=2, data={"repository": {"minirepo_file": str(file)}},
        rollout={"problems_per_step": 2, "group_size": 2, "max_new_tokens": 8},
        workflow={"repository": {"max_turns": 2}}, eval={"max_new_tokens": 8},
        tracking={"registered_model": None, "log_checkpoints": False}, audit={"rows": 4},
    )
    config = load_config(TrainingConfig, path)
    assert yaml.safe_load(path.read_text())["data"]["repository"]["minirepo_file"] == str(file)
    results = Trainer(config, tmp_path / "run", progress=False).run()
    assert results.steps == 2 and results.heldout_problems == 1
    for record in results.history:
        m = record.metrics
        assert m["episodes"] == 4 and m["rollout/infra_masked"] == 0 and m["rollout/turns_mean"] == 2
        assert m["rollout/parse_failures"] + sum(v for k, v in m.items() if k.startswith("tools/")) == 8
        assert {f"tools/{name}" for name in config.workflow.repository.tools} <= set(m)
        assert m["audit/offending_tokens"] == 0
    assert "heldout_pass@1" in results.final_metrics and "heldout_reward_mean" in results.final_metrics
    assert results.audit["trajectories"] > 0 and results.audit["offending_tokens"] == 0
    assert json.loads((tmp_path / "run" / "data_manifest.json").read_text())["kind"] == "repository"
    # A sample of each step's episodes is recorded as MLflow traces of the run (tracking.trace_episodes).
    client = MlflowClient(f"sqlite:///{tmp_path / 'run' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name(config.tracking.experiment)
    traces = client.search_traces(locations=[experiment.experiment_id])
    assert sorted(t.info.tags["step"] for t in traces) == ["1", "1", "2", "2"]
    assert {t.info.tags["kind"] for t in traces} == {"repository"}
