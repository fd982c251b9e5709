"""The batch source: where each training step's rows come from. The trainer sees only this seam.

``BatchSource`` draws each step's problems (``ProblemSampler``), samples ``group_size`` episodes of each
through the training graph (``episodes.collect``; repository tasks through the repository graph,
``repository.collect_repository``) on a rollout engine, refills zero-variance groups when
``rollout.refill_zero_variance`` asks, shapes the rewards (``scoring``) and turns the episodes into
training rows after batch hygiene; masked episodes (infrastructure failures) train nothing. Its lifecycle:

- ``start(grader, reward_fn, version)``: build the rollout engine ``rollout.engine`` names (the registry of
  ``rollouts.engines``) and publish the trainer's weights;
- ``take(step)``: step ``step``'s ``StepBatch``;
- ``advance(version)``: publish the weights an update produced;
- ``state_dict``/``load_state_dict`` (the sampler's cursor, the running reward moments) and
  ``save``/``load`` (the batches submitted but not trained on, and their versions' weights): what a
  checkpoint holds so that a resumed run takes the same batches;
- ``close()``.

Synchronous, asynchronous and vLLM rollouts are configurations of this one object:
``rollout.max_staleness`` = K (0: the trainer's own engine, inline; K >= 1: a ``LocalCopyEngine`` sampling
on a worker thread, at most K versions behind) and ``rollout.engine`` (``vllm``: a ``VLLMRolloutEngine``).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from coding_framework.config.graph import WorkflowConfig
from coding_framework.config.training import TrainingConfig
from coding_framework.grading import Grader
from coding_framework.llm.base import TokenEngine
from coding_framework.llm.local import LocalEngine
from coding_framework.logs import get_logger
from coding_framework.problems import Problem
from coding_framework.repotasks import RepoTask
from coding_framework.rewards import CompositeReward
from coding_framework.training.algos.hygiene import flat_groups, overlong_hygiene
from coding_framework.training.algos.schedule import ProblemSampler, Task, temperature_at
from coding_framework.training.algos.seeds import derive_seed
from coding_framework.training.rollouts.engines import (
    PolicySnapshot,
    PolicyWeights,
    Produced,
    RolloutEngine,
    RolloutJob,
    RolloutPipeline,
    TrainerEngine,
    behaviour_version,
    build_rollout_engine,
)
from coding_framework.training.rollouts.episodes import RolloutBatch, collect, step_workflow
from coding_framework.training.rollouts.guidance import guided
from coding_framework.training.rollouts.repository import collect_repository
from coding_framework.training.rollouts.scoring import (
    RunningMoments,
    episode_rewards,
    review_metrics,
    rollout_metrics,
    shape_rewards,
    to_trajectories,
    trained_episodes,
)
from coding_framework.training.trajectory import Trajectory

__all__ = ["INFLIGHT_FILE", "BatchSource", "StepBatch"]

log = get_logger(__name__)

INFLIGHT_FILE = "inflight.pt"  # a checkpoint's batches submitted but not trained on, and their weights


@dataclass
class StepBatch:
    """One step's training rows; ``metrics`` are the rollout's, the reviews', batch hygiene's and refill
    counts; ``behaviour`` the weights that sampled the rows (None: the trainer's current weights)."""

    rows: list[Trajectory]
    metrics: dict[str, float]
    behaviour: PolicySnapshot | None
    produced: Produced

    @property
    def rollout(self) -> RolloutBatch:
        batch: RolloutBatch = self.produced.result
        return batch


class BatchSource:
    """Step batches for a run of ``config`` on ``problems`` (sampled by ``weights``) while ``policy``, on
    ``engine``, is trained. ``work_dir`` holds what a vLLM engine writes (its base model, adapters, logs)."""

    def __init__(self, config: TrainingConfig, problems: Sequence[Task], weights: Sequence[float] | None,
                 engine: LocalEngine, policy: PolicyWeights, work_dir: Path) -> None:
        self.config, self.engine, self.policy, self.work_dir = config, engine, policy, work_dir
        self.sampler = ProblemSampler(problems, config.seed, config.curriculum, weights)
        self.moments = RunningMoments()
        self.pipeline: RolloutPipeline | None = None
        self._inflight: tuple[list[RolloutJob], dict[int, PolicySnapshot]] = ([], {})

    # -- lifecycle ------------------------------------------------------------------------------------------

    def start(self, grader: Grader, reward_fn: CompositeReward, version: int) -> None:
        """Build the rollout engine and publish ``version``, the trainer's weights now; a resumed run first
        resubmits the batches its checkpoint held (``load``)."""
        cfg = self.config

        def draw(step: int) -> RolloutJob:
            return RolloutJob(step, behaviour_version(step, cfg.rollout.max_staleness),
                              self._guided(self.sampler.draw(step, cfg.rollout.problems_per_step), step),
                              temperature_at(step, cfg.steps, cfg.rollout))

        def produce(job: RolloutJob, engine: Any) -> RolloutBatch:
            workflow = step_workflow(cfg.workflow, cfg.rollout.max_new_tokens, job.temperature,
                                     cfg.rollout.top_p)
            seed = derive_seed(cfg.seed, "rollout", job.step)
            rollout = asyncio.run(_collect(engine, workflow, grader, job.problems, cfg.rollout.group_size,
                                           seed, reward_fn))
            if cfg.rollout.refill_zero_variance:
                rollout = self._refill(rollout, job, engine, workflow, grader, reward_fn)
            return rollout

        engine = build_rollout_engine(cfg, self.engine, self.policy, self.work_dir)
        pipeline = RolloutPipeline(engine, cfg.rollout.max_staleness, cfg.steps, draw, produce)
        try:
            pending, snapshots = self._inflight
            sync_s = pipeline.start(version, self._snapshot(engine), pending, snapshots)
        except BaseException:
            pipeline.close()
            raise
        self.pipeline = pipeline
        log.info("rollout_engine", engine=cfg.rollout.engine, max_staleness=cfg.rollout.max_staleness,
                 sync_s=round(sync_s, 3), resumed_batches=len(pending))

    def take(self, step: int) -> StepBatch:
        """Step ``step``'s rows: its episodes' shaped rewards on the trained roles' calls, after hygiene."""
        cfg = self.config
        pipeline = self._started()
        produced = pipeline.take(step)
        rollout: RolloutBatch = produced.result
        metrics = rollout_metrics(rollout, cfg.workflow.repository.tools)
        trained = trained_episodes(rollout.episodes)
        shaped = shape_rewards(episode_rewards(trained, cfg.reward), cfg.reward, self.moments)
        metrics.update(review_metrics(trained, cfg.reward.review))
        rows = to_trajectories(trained, shaped, cfg.rollout.trained_roles, step, cfg.reward.review)
        rows, hygiene = overlong_hygiene(rows, cfg.rollout)
        metrics.update({**hygiene, **rollout.stats})
        sampled_by = produced.job.version
        behaviour = None if sampled_by == step else pipeline.snapshot_of(sampled_by)
        return StepBatch(rows, metrics, behaviour, produced)

    def advance(self, version: int) -> float:
        """Publish the policy's weights as ``version`` (after an update); the sync seconds."""
        pipeline = self._started()
        return pipeline.advance(version, self._snapshot(pipeline.engine))

    def eval_engine(self) -> TokenEngine:
        """The current policy as ``eval.engine`` names it: the trainer's engine, or the rollout engine's
        newest published version (every update is published before the next evaluation)."""
        if self.config.eval.engine == "rollout" and self.pipeline is not None:
            return self.pipeline.engine.engine_for(self.pipeline.version)
        return self.engine

    def close(self) -> None:
        if self.pipeline is not None:
            self.pipeline.close()

    # -- checkpoints ----------------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {"cursor": self.sampler.cursor, "moments": self.moments.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.sampler.cursor = state["cursor"]
        self.moments.load_state_dict(state["moments"])

    def save(self, directory: Path) -> None:
        """Write the batches submitted but not trained on, and the weights of their older versions."""
        if self.pipeline is None or not self.pipeline.pending:
            return
        jobs = sorted(self.pipeline.pending.values(), key=lambda j: j.step)
        older = {j.version for j in jobs} - {self.pipeline.version}
        torch.save({"jobs": [j.to_json() for j in jobs],
                    "snapshots": {v: self.pipeline.snapshot_of(v) for v in sorted(older)}},
                   directory / INFLIGHT_FILE)

    def load(self, directory: Path) -> int:
        """Read what ``save`` wrote, for ``start`` to resubmit; how many batches were in flight."""
        if (directory / INFLIGHT_FILE).is_file():
            inflight = torch.load(directory / INFLIGHT_FILE, weights_only=False, map_location="cpu")
            self._inflight = ([RolloutJob.from_json(j) for j in inflight["jobs"]], inflight["snapshots"])
        return len(self._inflight[0])

    # -- rollouts -------------------------------------------------------------------------------------------

    def _started(self) -> RolloutPipeline:
        if self.pipeline is None:
            raise RuntimeError("the batch source has not started: call start() first")
        return self.pipeline

    def _guided(self, tasks: list[Task], step: int) -> list[Task]:
        guidance = self.config.data.guidance
        return tasks if guidance is None else guided(tasks, guidance, step, self.config.steps)

    def _snapshot(self, engine: RolloutEngine) -> PolicySnapshot:
        """The weights ``engine`` needs: none for the trainer's own, which samples with the live weights."""
        return {} if isinstance(engine, TrainerEngine) else self.policy.snapshot()

    def _refill(self, rollout: RolloutBatch, job: RolloutJob, engine: Any, workflow: WorkflowConfig,
                grader: Grader, reward_fn: CompositeReward) -> RolloutBatch:
        """Step ``job``'s batch with its zero-variance groups replaced by groups of extra rollouts (problems
        from ``ProblemSampler.extra``), counted in the batch's ``batch/*`` stats. Where ``max_refill_rounds``
        finds too few, flat groups stay (``batch/flat_kept``): the batch keeps its size."""
        cfg = self.config
        trained = trained_episodes(rollout.episodes)
        flat = flat_groups([e.group for e in trained], episode_rewards(trained, cfg.reward))
        episodes = [e for e in rollout.episodes if e.group not in flat]
        tokens, waves = rollout.generated_tokens, rollout.waves
        seconds = dict(rollout.seconds)
        added, rounds = 0, 0
        while added < len(flat) and rounds < cfg.rollout.max_refill_rounds:
            rounds += 1
            problems = self._guided(self.sampler.extra(job.step, rounds, len(flat) - added), job.step)
            extra = asyncio.run(_collect(engine, workflow, grader, problems, cfg.rollout.group_size,
                                         derive_seed(cfg.seed, "refill", job.step, rounds), reward_fn))
            tokens, waves = tokens + extra.generated_tokens, waves + extra.waves
            seconds = {k: seconds.get(k, 0.0) + v for k, v in extra.seconds.items()}
            scored = trained_episodes(extra.episodes)
            still_flat = flat_groups([e.group for e in scored], episode_rewards(scored, cfg.reward))
            for group in sorted({e.group for e in scored} - still_flat)[: len(flat) - added]:
                episodes += [dataclasses.replace(e, group=10_000 * rounds + group)
                             for e in extra.episodes if e.group == group]
                added += 1
        short = sorted(flat)[: len(flat) - added]  # refills ran out: flat groups fill the batch back up
        episodes += [e for e in rollout.episodes if e.group in short]
        order = {g: i for i, g in enumerate(dict.fromkeys(e.group for e in episodes))}
        episodes = [dataclasses.replace(e, index=i, group=order[e.group]) for i, e in enumerate(episodes)]
        stats = {"batch/flat_groups": float(len(flat)), "batch/refill_groups": float(added),
                 "batch/refill_rounds": float(rounds), "batch/flat_kept": float(len(short))}
        return RolloutBatch(episodes, tokens, waves, seconds, stats)


async def _collect(engine: Any, workflow: WorkflowConfig, grader: Grader, tasks: Sequence[Task],
                   group_size: int, seed: int, reward_fn: CompositeReward) -> RolloutBatch:
    """The rollout of ``tasks``: problems through the training graph, repository tasks through the
    repository graph (rewarded by their verdicts, not ``reward_fn``)."""
    repos = [t for t in tasks if isinstance(t, RepoTask)]
    problems = [t for t in tasks if isinstance(t, Problem)]
    if repos and problems:
        raise ValueError("a rollout runs problems or repository tasks, not both")
    if repos:
        return await collect_repository(engine, workflow, grader, repos, group_size, seed)
    return await collect(engine, workflow, grader, problems, group_size, seed, reward_fn)
