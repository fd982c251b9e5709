"""One model request that fails alone (a timeout, a prompt past the server's context) ends its own episode,
which trains nothing and is counted; the rest of the batch trains. A run once died at step 3 of 50 because
one vLLM request of a 64-sample wave ran past 600 s."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence

import pytest

from coding_framework.config.graph import WorkflowConfig
from coding_framework.config.rewards import RewardConfig
from coding_framework.grading import Grader
from coding_framework.llm.base import (
    BatchRequestsFailed,
    EngineError,
    Generation,
    RequestFailed,
    SamplingParams,
)
from coding_framework.rewards import CompositeReward
from coding_framework.testing.chat import fenced
from coding_framework.testing.engine import ScriptedEngine
from coding_framework.training.rollouts.episodes import REQUEST_FAILED, collect, step_workflow
from coding_framework.training.rollouts.scoring import rollout_metrics, to_trajectories
from coding_framework.training.run.heldout import evaluate_heldout
from tests.training._episodes import ADD

RIGHT = fenced("def add(a, b):\n    return a + b")


class FailingRowEngine(ScriptedEngine):
    """Answers every row but ``row`` of each batch, which fails alone (as the vLLM client reports it), or
    fails the whole batch with ``error``."""

    def __init__(self, row: int = 1, error: Exception | None = None) -> None:
        super().__init__(respond=lambda _: RIGHT)
        self.row, self.error = row, error

    def generate_batch(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[Generation]:
        if self.error is not None:
            raise self.error
        outcomes: list[Generation | RequestFailed] = list(super().generate_batch(prompts, params))
        outcomes[self.row] = RequestFailed("vLLM did not answer POST /completions within 600 s")
        raise BatchRequestsFailed(outcomes)


@pytest.fixture(scope="module")
def grader() -> Iterator[Grader]:
    with Grader() as g:
        yield g


def _collect(engine: ScriptedEngine, grader: Grader) -> object:
    workflow = step_workflow(WorkflowConfig(), max_new_tokens=24, temperature=1.0, top_p=1.0, max_rounds=1)
    reward = CompositeReward(RewardConfig(weights={"correctness": 1.0, "style": 0.0, "efficiency": 0.0}),
                             grader=grader)
    return asyncio.run(collect(engine, workflow, grader, [ADD], 3, seed=0, reward_fn=reward))


def test_a_failed_request_masks_its_episode_and_the_rest_train(grader: Grader) -> None:
    batch = _collect(FailingRowEngine(row=1), grader)
    masked = [e for e in batch.episodes if e.masked is not None]  # type: ignore[attr-defined]
    assert [e.index for e in masked] == [1]
    assert "request failed" in masked[0].masked and "600 s" in masked[0].masked
    assert REQUEST_FAILED in masked[0].state
    assert [e.passed for e in batch.episodes if e.masked is None] == [True, True]  # type: ignore[attr-defined]
    rows = to_trajectories(batch.episodes, [1.0] * 3, ["generator"], step=0)  # type: ignore[attr-defined]
    assert [r.metadata["episode"] for r in rows] == [0, 2]
    metrics = rollout_metrics(batch)  # type: ignore[arg-type]
    assert metrics["rollout/request_failed"] == 1.0 and metrics["episodes"] == 3.0
    assert metrics["pass_rate"] == 1.0  # over the episodes that train


def test_a_failed_request_in_the_heldout_eval_fails_its_sample_and_is_counted(grader: Grader) -> None:
    heldout = evaluate_heldout(FailingRowEngine(row=1), WorkflowConfig(), grader, [ADD],
                               max_new_tokens=24, temperature=0.0, max_rounds=1, seed=0, samples=3)
    result = asyncio.run(heldout)
    assert result.request_failed == 1
    assert result.pass_at_1 == pytest.approx(2 / 3)
    assert result.metrics()["heldout_request_failed"] == 1.0


def test_an_engine_failure_still_ends_the_rollout(grader: Grader) -> None:
    with pytest.raises(EngineError, match="unreachable"):
        _collect(FailingRowEngine(error=EngineError("the vLLM server is unreachable")), grader)
