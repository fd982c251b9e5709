"""The held-out set and the benchmark slices evaluated while training: before step 1, every ``eval.every``
steps and at the end.

The held-out set runs under ``eval``'s sampling (``evaluate_policy``; held-out repository tasks through
the repository graph, ``evaluate_repository_policy``). Each slice (``eval.benchmarks``)
runs through the same episode-and-grade path as the held-out set (``heldout.evaluate_heldout``: the
training graph's workflow, graded again by the sandbox), with the slice's prompt (``few-shot``: MBPP's
standard 3-shot prompt) and sampling; its figures are logged as ``eval/<label>/pass@k``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from coding_framework.agents.executor import AsyncGrader
from coding_framework.config.training import BenchmarkSlice, TrainingConfig
from coding_framework.grading import Grader
from coding_framework.llm.base import TokenEngine
from coding_framework.problems import Problem, with_few_shot_prompt
from coding_framework.repotasks import RepoTask
from coding_framework.training.algos.seeds import derive_seed
from coding_framework.training.run.heldout import HeldoutResult, evaluate_heldout, evaluate_repositories

__all__ = ["evaluate_policy", "evaluate_repository_policy", "evaluate_slices", "slice_metrics"]


def _sampling(config: TrainingConfig) -> dict[str, Any]:
    """``config.eval``'s sampling, seeded by the run's seed: the same for problems and repository tasks."""
    ev = config.eval
    return {"max_new_tokens": ev.max_new_tokens or config.rollout.max_new_tokens,
            "temperature": ev.temperature, "seed": derive_seed(config.seed, "eval"), "samples": ev.samples}


async def evaluate_policy(
    engine: TokenEngine, config: TrainingConfig, grader: AsyncGrader, problems: list[Problem]
) -> HeldoutResult:
    """The held-out problems under ``config.eval``'s sampling."""
    return await evaluate_heldout(engine, config.workflow, grader, problems,
                                  max_rounds=config.eval.max_rounds, **_sampling(config))


async def evaluate_repository_policy(
    engine: TokenEngine, config: TrainingConfig, grader: Grader, tasks: list[RepoTask]
) -> HeldoutResult:
    """The held-out repository tasks under ``config.eval``'s sampling."""
    return await evaluate_repositories(engine, config.workflow, grader, tasks, **_sampling(config))


async def evaluate_slices(
    engine: TokenEngine,
    config: TrainingConfig,
    grader: AsyncGrader,
    slices: Mapping[str, tuple[BenchmarkSlice, list[Problem]]],
) -> dict[str, HeldoutResult]:
    """Each slice's result, by label, in order."""
    ev = config.eval
    out = {}
    for label, (spec, problems) in slices.items():
        asked = [with_few_shot_prompt(p) for p in problems] if spec.prompt == "few-shot" else problems
        out[label] = await evaluate_heldout(
            engine,
            config.workflow,
            grader,
            asked,
            max_new_tokens=ev.max_new_tokens or config.rollout.max_new_tokens,
            temperature=spec.temperature,
            max_rounds=ev.max_rounds,
            seed=derive_seed(config.seed, f"eval:{label}"),
            samples=spec.samples,
        )
    return out


def slice_metrics(results: Mapping[str, HeldoutResult]) -> dict[str, float]:
    """``eval/<label>/pass@k`` for every slice and k."""
    return {f"eval/{label}/{k}": v for label, r in results.items() for k, v in r.pass_at_k.items()}
