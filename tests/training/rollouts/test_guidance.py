"""Solution-prefix guidance: problems the policy never solves train with the start of their reference
solution given, less of it each step, beside the pass-rate band's problems."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from coding_framework.config import ConfigError, GuidanceConfig, load_config
from coding_framework.config.graph import WorkflowConfig
from coding_framework.config.rewards import RewardConfig
from coding_framework.config.training import TrainingConfig
from coding_framework.curation import with_pass_rates
from coding_framework.grading import Grader
from coding_framework.problems import builtin_problems, write_problem_records
from coding_framework.rewards import CompositeReward
from coding_framework.testing.engine import ScriptedEngine
from coding_framework.training.rollouts.episodes import collect, step_workflow
from coding_framework.training.rollouts.guidance import answer_prefix, given_share, guided
from coding_framework.training.rollouts.scoring import rollout_metrics
from coding_framework.training.run.data import prepare_data
from tests.training._episodes import ADD


def test_the_given_share_fades_to_nothing() -> None:
    guidance = GuidanceConfig(share=0.5, fade_steps=10)
    assert [given_share(guidance, s, 100) for s in (0, 5, 10, 20)] == [0.5, 0.25, 0.0, 0.0]
    assert given_share(GuidanceConfig(share=0.5), 50, 100) == 0.25  # fades over the run by default


def test_the_prefix_is_the_opening_lines_of_the_reference_in_a_python_block() -> None:
    reference = "def f(x):\r\n    y = x\r\n    return y\n"
    problem = builtin_problems()[0].model_copy(update={"solutions": [reference]})
    assert answer_prefix(problem, 0.7) == "```python\ndef f(x):\n    y = x\n"
    assert answer_prefix(problem, 0.3) is None  # under one line: nothing given


def test_only_ranked_problems_below_the_threshold_are_guided() -> None:
    never, sometimes, unranked = builtin_problems()[:3]
    never = never.model_copy(update={"pass_rate": 0.0})
    sometimes = sometimes.model_copy(update={"pass_rate": 0.5})
    out = guided([never, sometimes, unranked], GuidanceConfig(share=0.9), step=0, steps=10)
    assert out[0].answer_prefix is not None and out[0].answer_prefix.startswith("```python\ndef ")
    assert out[1] is sometimes and out[2] is unranked
    assert guided([never], GuidanceConfig(share=0.9), step=10, steps=10)[0].answer_prefix is None


def test_guided_problems_train_beside_the_band_and_are_counted(tmp_path: Path) -> None:
    problems, held = builtin_problems()[:4], builtin_problems()[4:6]
    no_solution = problems[3].model_copy(update={"solutions": []})
    outcomes = [(problems[0].task_id, False), (problems[1].task_id, True), (problems[2].task_id, True),
                (problems[2].task_id, False), (no_solution.task_id, False)]  # fmt: skip
    ranked = write_problem_records(with_pass_rates([*problems[:3], no_solution], outcomes, "m"),
                                   tmp_path / "r.jsonl")  # fmt: skip
    source = write_problem_records([*problems[:3], no_solution], tmp_path / "train.jsonl")
    data = {"train": [str(source)], "heldout": str(write_problem_records(held, tmp_path / "held.jsonl")),
            "pass_rates": str(ranked), "pass_rate_band": [0.1, 0.9], "guidance": {"below": 0.05},
            "decontamination": {"against": []}}  # fmt: skip
    prepared = prepare_data(TrainingConfig.model_validate({"data": data, "eval": {"benchmarks": []}}))
    assert [p.task_id for p in prepared.train] == [problems[0].task_id, problems[2].task_id]
    assert prepared.manifest["guidance"] == {"below": 0.05, "guided": 1, "without_solution": 1}
    bad = tmp_path / "bad.yaml"
    bad.write_text("data: {guidance: {below: 0.05}}\n")
    with pytest.raises(ConfigError, match="guidance needs pass_rates"):
        load_config(TrainingConfig, str(bad))


def test_a_rollout_grades_the_given_prefix_and_the_continuation_as_one_program() -> None:
    problem = ADD.model_copy(update={"pass_rate": 0.0, "solutions": ["def add(a, b):\n    return a + b\n"]})
    [hinted] = guided([problem], GuidanceConfig(share=0.5), step=0, steps=10)
    engine = ScriptedEngine(["    return a + b\n```", "    return a - b\n```"])
    workflow = step_workflow(WorkflowConfig(), max_new_tokens=24, temperature=1.0, top_p=1.0, max_rounds=1)
    with Grader() as grader:
        reward = CompositeReward(RewardConfig(weights={"correctness": 1.0, "style": 0.0, "efficiency": 0.0}),
                                 grader=grader)  # fmt: skip
        batch = asyncio.run(collect(engine, workflow, grader, [hinted], 2, seed=0, reward_fn=reward))
    assert [e.passed for e in batch.episodes] == [True, False]
    metrics = rollout_metrics(batch)
    assert (metrics["rollout/guided"], metrics["rollout/guided_pass_rate"]) == (2.0, 0.5)
