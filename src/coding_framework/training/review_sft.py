"""The Reviewer's warm start: supervised training on review labels the pipeline makes itself.

No human review labels exist here, so the pipeline writes them. Episodes of two rounds run with the policy
as the Generator and a reviewer built on real analysis (``GraderReviewer``: every test the grader saw fail,
then the static reviewer's ruff and ast findings). Each review of a failing first draft is labelled by what
followed it: *useful* when the revision passed more tests than the draft (``rewards.review_credit``). The
Reviewer is then fine-tuned on the useful reviews (filtered behaviour cloning): cross-entropy on the review's
tokens only, its request rendered exactly as the LLM Reviewer sends it (``agents.reviewer.review_messages``).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from coding_framework.agents.executor import AsyncGrader
from coding_framework.agents.factory import build_agents
from coding_framework.agents.reviewer import REVIEWER_ROLE, StaticReviewer, render_findings, review_messages
from coding_framework.agents.types import Execution, Finding, Review
from coding_framework.config.graph import WorkflowConfig
from coding_framework.config.review_credit import ReviewCreditConfig, ReviewWarmStartConfig
from coding_framework.graphs import build_graph
from coding_framework.graphs.nodes import execution_of
from coding_framework.llm.base import TokenEngine
from coding_framework.problems import Problem
from coding_framework.rewards.review_credit import review_outcomes
from coding_framework.training.algos.seeds import derive_seed
from coding_framework.training.rollouts.episodes import LockstepEngine, run_lockstep, step_workflow
from coding_framework.training.sft import encode_turn, fit

__all__ = ["GraderReviewer", "ReviewExample", "review_dataset", "review_sft", "warm_start_reviewer"]

class GraderReviewer(StaticReviewer):
    """The static reviewer's analysis led by every failing test the grader reported (the first included,
    since a trained Reviewer is read on its own), or the Executor's verdict when no test ran."""

    async def areview(self, problem: Problem, code: str, execution: Execution) -> Review:
        static = await super().areview(problem, code, execution)
        tests = [Finding(kind="test", message=line) for line in execution.failures]
        if not tests and not static.findings:
            tests = [Finding(kind="test", message=execution.feedback.strip().splitlines()[0])]
        findings = [*tests[:1], *static.findings] if tests else list(static.findings)
        return Review(source="static", text=render_findings(findings, self.config.max_findings),
                      findings=findings)


@dataclass(frozen=True)
class ReviewExample:
    """A review of a failing draft, its request as the LLM Reviewer sees it, and what the revision did."""

    task_id: str
    messages: list[dict[str, str]]
    review: str
    draft_tests: int
    revision_tests: int
    tests_total: int
    revision_passed: bool

    @property
    def useful(self) -> bool:
        return self.revision_tests > self.draft_tests


async def review_dataset(
    engine: TokenEngine,
    workflow: WorkflowConfig,
    grader: AsyncGrader,
    problems: Sequence[Problem],
    settings: ReviewWarmStartConfig,
    seed: int,
) -> list[ReviewExample]:
    """Run ``settings.samples`` two-round episodes of each problem (the policy drafts, ``GraderReviewer``
    reviews a failing draft, the policy revises) and return every review a revision followed."""
    wf = step_workflow(workflow, settings.max_new_tokens, settings.temperature, 1.0, max_rounds=2)
    jobs = [p for p in problems for _ in range(settings.samples)]
    lockstep = LockstepEngine(engine, seed, len(jobs))
    agents = build_agents(wf.agents.model_copy(update={"reviewer": wf.agents.reviewer.model_copy(
        update={"backend": "static"})}), grader, mode="training", engine=lockstep)
    agents.reviewer = GraderReviewer(wf.agents.reviewer)
    graph = build_graph(agents, wf.graph.model_copy(update={"review": "on_failure"}))
    states = await run_lockstep(graph, [{"problem": p.model_dump()} for p in jobs], lockstep)
    credit = ReviewCreditConfig()
    examples = []
    for problem, state in zip(jobs, states, strict=True):
        rounds = state.get("rounds", [])
        for outcome in review_outcomes(rounds, credit):
            if outcome.useful is None:
                continue
            draft = rounds[outcome.round - 1]
            examples.append(ReviewExample(
                task_id=problem.task_id,
                messages=review_messages(problem, draft["code"], execution_of(draft)),
                review=draft["review"],
                draft_tests=outcome.draft_tests,
                revision_tests=int(outcome.revision_tests or 0),
                tests_total=int(draft["tests_total"]),
                revision_passed=bool(outcome.revision_passed),
            ))
    return examples


def review_sft(
    model: torch.nn.Module,
    tokenizer: object,
    examples: Sequence[ReviewExample],
    settings: ReviewWarmStartConfig,
    seed: int,
    parameters: Sequence[torch.nn.Parameter] | None = None,
) -> dict[str, float]:
    """Fine-tune ``parameters`` (default: every trainable one of ``model``) on the useful reviews in
    ``examples``: mean token cross-entropy on review tokens only (and the token that ends the turn, so
    the Reviewer learns to stop), AdamW, ``settings.epochs`` shuffled passes. Returns the first and last
    epoch's mean loss."""
    rows = [encode_turn(tokenizer, e.messages, e.review, settings.max_review_tokens)
            for e in examples if e.useful]
    if not rows:
        return {"warm_start/sft_examples": 0.0}
    epoch_losses = fit(model, tokenizer, rows, epochs=settings.epochs, lr=settings.lr,
                       micro_batch_size=settings.micro_batch_size, seed=seed, parameters=parameters)
    return {"warm_start/sft_examples": float(len(rows)), "warm_start/loss_first_epoch": epoch_losses[0],
            "warm_start/loss_last_epoch": epoch_losses[-1]}


def warm_start_reviewer(
    engine: TokenEngine,
    model: torch.nn.Module,
    workflow: WorkflowConfig,
    grader: AsyncGrader,
    problems: Sequence[Problem],
    settings: ReviewWarmStartConfig,
    seed: int,
) -> dict[str, float]:
    """Make the review dataset from ``settings.problems`` of ``problems`` (drawn with ``seed``) and fine-tune
    the Reviewer on it: the Reviewer's adapter when ``engine`` decodes through per-role adapters
    (``engine.adapters``), else ``model``, the shared policy; ``engine`` must sample from ``model``.
    Metrics under ``warm_start/``."""
    start = time.perf_counter()
    chosen = random.Random(derive_seed(seed, "warm_start")).sample(
        list(problems), min(settings.problems, len(problems))
    )
    episodes_seed = derive_seed(seed, "warm_start", "episodes")
    examples = asyncio.run(review_dataset(engine, workflow, grader, chosen, settings, episodes_seed))
    useful = sum(e.useful for e in examples)
    metrics = {
        "warm_start/reviews": float(len(examples)),
        "warm_start/useful_share": useful / len(examples) if examples else 0.0,
    }
    sft_seed = derive_seed(seed, "warm_start", "sft")
    adapters: Any = getattr(engine, "adapters", None)
    adapter = adapters.adapter_for(REVIEWER_ROLE) if adapters is not None else None
    if adapter is None:
        metrics.update(review_sft(model, engine.tokenizer, examples, settings, sft_seed))
    else:
        with adapters.using(adapter):
            metrics.update(review_sft(adapters.base, engine.tokenizer, examples, settings, sft_seed,
                                      adapters.parameters(adapter)))
    metrics["warm_start/seconds"] = time.perf_counter() - start
    return metrics
