"""Held-out evaluation during training: one episode per held-out problem, graded again in the sandbox; or,
in a run on repository tasks, one repository episode per held-out task, scored by its verdict (resolved)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import cast

from pydantic import BaseModel

from coding_framework.agents.executor import AsyncGrader
from coding_framework.config.graph import WorkflowConfig
from coding_framework.evaluation.episodes import agrade, repeat, review_usefulness, score
from coding_framework.evaluation.passk import summarize
from coding_framework.grading import Grader
from coding_framework.graphs import build_training_graph
from coding_framework.llm.base import TokenEngine
from coding_framework.problems import Problem
from coding_framework.repotasks import RepoTask
from coding_framework.training.rollouts.episodes import (
    REQUEST_FAILED,
    LockstepEngine,
    final_program,
    run_lockstep,
    step_workflow,
)
from coding_framework.training.rollouts.repository import collect_repository

__all__ = ["HeldoutResult", "evaluate_heldout", "evaluate_repositories"]


class HeldoutResult(BaseModel):
    """pass@1 over the held-out problems (or a benchmark slice), overall, per tag (the synthetic family) and
    per task; ``pass_at_k`` for each k up to the samples per problem."""

    pass_at_1: float
    problems: int
    by_family: dict[str, float]
    seconds: float
    pass_at_k: dict[str, float] = {}
    by_task: dict[str, float] = {}
    review_usefulness: float | None = None
    """Share of reviews of failing drafts after which the next draft passed more tests (None: no such)."""
    reviews_judged: int = 0
    reward_mean: float | None = None
    """Repository tasks: the mean verdict reward of the measured episodes (None: problems)."""
    infra_masked: int = 0
    """Repository tasks: episodes left unmeasured by an infrastructure failure."""
    request_failed: int = 0
    """Problems: episodes a failed model request ended (graded as failed, and counted here)."""

    def metrics(self) -> dict[str, float]:
        """``heldout_pass@1`` (on repository tasks: the resolved rate); ``heldout_request_failed`` when a
        model request failed; ``heldout_review_usefulness`` and ``heldout_reviews_judged`` when reviews were
        judged; ``heldout_reward_mean`` and ``heldout_infra_masked`` on repository tasks."""
        out = {"heldout_pass@1": self.pass_at_1}
        if self.request_failed:
            out["heldout_request_failed"] = float(self.request_failed)
        if self.review_usefulness is not None:
            out["heldout_review_usefulness"] = self.review_usefulness
            out["heldout_reviews_judged"] = float(self.reviews_judged)
        if self.reward_mean is not None:
            out["heldout_reward_mean"] = self.reward_mean
            out["heldout_infra_masked"] = float(self.infra_masked)
        return out


async def evaluate_heldout(
    engine: TokenEngine,
    workflow: WorkflowConfig,
    grader: AsyncGrader,
    problems: Sequence[Problem],
    *,
    max_new_tokens: int,
    temperature: float,
    max_rounds: int,
    seed: int,
    samples: int = 1,
) -> HeldoutResult:
    """Run the workflow ``samples`` times on each problem (``max_rounds`` drafts each) and grade the final
    programs; pass@1 is the unbiased estimate over each problem's samples. An episode a failed model request
    ended is graded as failed (its program is empty) and counted in ``request_failed``."""
    start = time.perf_counter()
    wf = step_workflow(workflow, max_new_tokens, temperature, 1.0, max_rounds=max_rounds)
    episodes = repeat(problems, samples)
    lockstep = LockstepEngine(engine, seed, len(episodes))
    graph = build_training_graph(wf, grader=grader, engine=lockstep)
    states = await run_lockstep(graph, [{"problem": p.model_dump()} for p in episodes], lockstep)
    programs = [final_program(p, s) for p, s in zip(episodes, states, strict=True)]
    graded = await agrade(grader, episodes, programs)
    scores = score(episodes, graded, ks=range(1, samples + 1))
    usefulness, judged = review_usefulness(states)
    return HeldoutResult(
        pass_at_1=scores.pass_at_k["pass@1"],
        problems=len(problems),
        by_family=scores.by_family,
        seconds=time.perf_counter() - start,
        pass_at_k=scores.pass_at_k,
        by_task=scores.by_task,
        review_usefulness=usefulness,
        reviews_judged=judged,
        request_failed=sum(REQUEST_FAILED in s for s in states),
    )


async def evaluate_repositories(
    engine: TokenEngine,
    workflow: WorkflowConfig,
    grader: Grader,
    tasks: Sequence[RepoTask],
    *,
    max_new_tokens: int,
    temperature: float,
    seed: int,
    samples: int = 1,
) -> HeldoutResult:
    """Run the repository graph ``samples`` times on each task; pass@k is over resolved episodes (the
    unbiased estimate), ``by_family`` by the tasks' difficulty. An episode with an infrastructure failure is
    left out (counted in ``infra_masked``), so a task with none measured is not in ``by_task``."""
    start = time.perf_counter()
    wf = step_workflow(workflow, max_new_tokens, temperature, 1.0)
    batch = await collect_repository(engine, wf, grader, tasks, samples, seed)
    measured = [e for e in batch.episodes if e.masked is None]
    by_task: dict[str, list[bool]] = {}
    by_family: dict[str, list[bool]] = {}
    for e in measured:
        task = cast(RepoTask, e.problem)
        by_task.setdefault(task.instance_id, []).append(e.passed)
        by_family.setdefault(task.difficulty, []).append(e.passed)
    pass_at_k = summarize(by_task, range(1, samples + 1)) if measured else {"pass@1": 0.0}
    return HeldoutResult(
        pass_at_1=pass_at_k["pass@1"],
        problems=len(tasks),
        by_family={k: sum(v) / len(v) for k, v in sorted(by_family.items())},
        seconds=time.perf_counter() - start,
        pass_at_k=pass_at_k,
        by_task={k: sum(v) / len(v) for k, v in by_task.items()},
        reward_mean=sum(e.reward.value for e in measured) / len(measured) if measured else 0.0,
        infra_masked=len(batch.episodes) - len(measured),
    )
