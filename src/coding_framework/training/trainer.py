"""The RL training loop: rollout -> score -> update, with held-out evaluation, checkpoints and tracking.

Each step draws problems (``schedule.ProblemSampler``), runs ``group_size`` episodes of each through the
multi-turn training graph (``rollout.collect``), shapes the rewards (``scoring``), audits a few
trajectories against the sampling weights (``auditor``), updates the policy (``update.PolicyUpdate``)
and bumps the engine's policy version. Everything random is derived from the seed and the step, and
the rest of the state is checkpointed, so ``resume`` continues a killed run exactly (on CPU, with
the same thread count). Rewards that time code (``efficiency``) are the exception: keep their weight
at 0 where bit-exact resumes matter.

The policy samples and trains on ``config.device``, or on the device of the engine passed in. The global
state a run sets (RNG seeds, thread count, progress bars, a frozen heap) lasts from ``Trainer(...)`` to
the end of ``run()`` (or ``close()``) and is then put back (``run_scope.RunScope``). What a run starts
from (spec, device, problems, base model, checkpoint) is resolved in ``setup``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
import resource
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel

from coding_framework.config.loader import ConfigError
from coding_framework.config.training import TrainingConfig
from coding_framework.grading import Grader
from coding_framework.llm.base import TokenEngine
from coding_framework.llm.local import LocalEngine
from coding_framework.logs import get_logger
from coding_framework.models.registry import CHALLENGER_ALIAS
from coding_framework.rewards import CompositeReward
from coding_framework.training.algos.hygiene import flat_groups, overlong_hygiene
from coding_framework.training.algos.schedule import ProblemSampler, temperature_at
from coding_framework.training.algos.seeds import derive_seed
from coding_framework.training.review_sft import warm_start_reviewer
from coding_framework.training.role_policies import RolePolicies
from coding_framework.training.rollout import RolloutBatch, collect, step_workflow
from coding_framework.training.rollout_engines import (
    LocalCopyEngine,
    PolicySnapshot,
    RolloutEngine,
    RolloutJob,
    RolloutPipeline,
    TrainerEngine,
    VLLMRolloutEngine,
    behaviour_version,
)
from coding_framework.training.run.checkpoint import Checkpoint, CheckpointManager
from coding_framework.training.run.data import MANIFEST_FILE, prepare_data
from coding_framework.training.run.evals import evaluate_slices, slice_metrics
from coding_framework.training.run.gate import GateResult, gate_verdict
from coding_framework.training.run.heldout import HeldoutResult, evaluate_heldout
from coding_framework.training.run.report import write_report
from coding_framework.training.run.results import StepRecord, TrainingResults
from coding_framework.training.run.scope import RunScope
from coding_framework.training.run.setup import (
    check_adapters,
    check_precision,
    resolve_spec,
    resume_point,
    starting_model,
    training_device,
)
from coding_framework.training.run.tracking import Trackers
from coding_framework.training.scoring import (
    RunningMoments,
    episode_rewards,
    review_metrics,
    rollout_metrics,
    shape_rewards,
    to_trajectories,
)

__all__ = ["CONFIG_FILE", "FINAL_MODEL", "Trainer"]

log = get_logger(__name__)

CONFIG_FILE = "config.json"
FINAL_MODEL = "final_model"
INFLIGHT_FILE = "inflight.pt"  # a checkpoint's batches submitted but not trained on, and their weights


def _policy(engine: LocalEngine, config: TrainingConfig) -> PreTrainedModel:
    """The engine's model, which the trainer updates in place and saves: a transformers model on the
    configured device (any device when ``device: auto``)."""
    model = getattr(engine, "model", None)
    if not isinstance(model, PreTrainedModel):
        raise TypeError(
            f"the engine's model is a {type(model).__name__}; the trainer updates and saves a "
            "transformers PreTrainedModel in place: pass a LocalEngine over one"
        )
    if config.device != "auto" and engine.device.type != config.device:
        raise ConfigError(
            f"device: {config.device}, but the engine passed to the trainer runs on {engine.device}; "
            "set device: auto (or the engine's device)"
        )
    return model


class Trainer:
    """One run in ``run_dir``. ``resume`` continues from its newest valid checkpoint (or starts fresh).

    ``engine``: the LocalEngine whose model is trained in place (its ``model``, ``tokenizer`` and
    ``device`` are used; ``config.model`` is then not loaded). Default: one over ``config.model`` on
    ``config.device``. The global state the run sets is restored when ``run()`` returns or raises; a
    trainer that is built but never run gives it back with ``close()`` (or a ``with`` block).

    ``on_step(step, metrics)`` is called after each step's metrics are logged and its checkpoint, if the
    step has one, is saved (a sweep reports both to Ray Tune from there); what it raises ends the run.
    """

    def __init__(
        self,
        config: TrainingConfig,
        run_dir: str | Path,
        *,
        engine: LocalEngine | None = None,
        resume: bool = False,
        progress: bool = True,
        on_step: Callable[[int, dict[str, float]], None] | None = None,
    ) -> None:
        self.config, self.run_dir, self.resume, self.progress = config, Path(run_dir), resume, progress
        self.on_step = on_step
        self.scope = RunScope()
        fresh = not self.run_dir.exists()
        try:
            self._build(engine)
        except BaseException:
            self.scope.close()
            if fresh and self.run_dir.is_dir():  # bad input leaves no half-written run directory behind
                shutil.rmtree(self.run_dir, ignore_errors=True)
            raise

    def _build(self, engine: LocalEngine | None) -> None:
        config = self.config
        self.scope.quiet_progress_bars()  # save_pretrained's bars would interleave with ours
        self.spec, self.kl = resolve_spec(config), config.kl
        device = training_device(config) if engine is None else None
        start = starting_model(config, self.progress) if engine is None else None
        self.data = prepare_data(config)
        if self.data.problems_per_step != config.rollout.problems_per_step:  # a small dataset: see manifest
            config = self.config = config.model_copy(deep=True)
            config.rollout.problems_per_step = self.data.problems_per_step
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._check_run_dir()
        self.data.write_manifest(self.run_dir)
        self.scope.seed(config.seed, config.threads)
        if engine is None:
            assert start is not None and start.model_dir is not None
            model_dir = start.model_dir
            tokenizer = AutoTokenizer.from_pretrained(model_dir)
            model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
            engine = LocalEngine(
                model,
                tokenizer,
                device=device,
                policy_version="0",
                max_batch_size=config.rollout.max_batch_size,
            )
        self.engine = engine
        self.model = _policy(engine, config)
        check_precision(config, engine.device)
        self.tokenizer = engine.tokenizer
        self.train_problems, self.heldout = self.data.train, self.data.heldout
        self.sampler = ProblemSampler(self.train_problems, config.seed, config.curriculum, self.data.weights)
        self.policies = RolePolicies(engine, self.model, self.spec, config)
        if start is not None and check_adapters(start, config):
            assert start.model_dir is not None
            self.policies.load_adapters(start.model_dir)  # continue the trained adapters, not fresh ones
        self.updater = self.policies.primary
        self.checkpoints = CheckpointManager(self.run_dir / "checkpoints", config.checkpoint.keep_last)
        self.moments = RunningMoments()
        self.history: list[StepRecord] = []
        self.baseline: HeldoutResult | None = None
        self.baseline_slices: dict[str, HeldoutResult] = {}
        self.audit_totals = {
            "trajectories": 0.0,
            "checked_tokens": 0.0,
            "offending_tokens": 0.0,
            "max_abs_diff": 0.0,
        }
        self.step = 0
        self.pipeline: RolloutPipeline | None = None
        self._inflight: tuple[list[RolloutJob], dict[int, PolicySnapshot]] = ([], {})
        # Imports, model and problems live for the whole run: frozen, they leave the full collections that
        # every rollout's many short-lived episode states trigger (benchmarks/orchestration_overhead.py).
        self.scope.freeze_gc()

    def close(self) -> None:
        """Put back the global state this trainer set (``run()`` does it when it ends)."""
        self.scope.close()

    def __enter__(self) -> Trainer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _same_config(self, saved: Path) -> bool:
        """Whether ``saved`` holds this run's config; fields added since it was written take defaults."""
        try:
            return TrainingConfig.model_validate(json.loads(saved.read_text())) == self.config
        except ValueError:  # not JSON, or no longer a valid config
            return False

    def _check_run_dir(self) -> None:
        saved = self.run_dir / CONFIG_FILE
        current = self.config.model_dump(mode="json")
        if self.resume and saved.is_file() and not self._same_config(saved):
            raise ConfigError(
                f"{self.run_dir} was started with a different configuration ({saved}); resume it with "
                "the same config and seed, or train into a new --run-dir"
            )
        if (
            not self.resume
            and (self.run_dir / "checkpoints").is_dir()
            and any((self.run_dir / "checkpoints").iterdir())
        ):
            raise ConfigError(
                f"{self.run_dir} already holds checkpoints: pass --resume to continue that run, or "
                "choose a new --run-dir"
            )
        saved.write_text(json.dumps(current, indent=2) + "\n")

    # -- checkpoints ---------------------------------------------------------------------------------------

    def _write_checkpoint(self, out: Path) -> None:
        self.policies.save_model(out / "model", self.tokenizer)
        rng = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
        torch.save({"update": self.policies.state_dict(), "rng": rng}, out / "trainer.pt")
        state = {
            "step": self.step,
            "cursor": self.sampler.cursor,
            "moments": self.moments.state_dict(),
            "history": [r.model_dump() for r in self.history],
            "audit": self.audit_totals,
            "baseline": self.baseline.model_dump() if self.baseline else None,
            "baseline_slices": {k: v.model_dump() for k, v in self.baseline_slices.items()},
        }
        (out / "state.json").write_text(json.dumps(state) + "\n")
        if self.pipeline is not None and self.pipeline.pending:
            jobs = sorted(self.pipeline.pending.values(), key=lambda j: j.step)
            older = {j.version for j in jobs} - {self.step}
            torch.save({"jobs": [j.to_json() for j in jobs],
                        "snapshots": {v: self.pipeline.snapshot_of(v) for v in sorted(older)}},
                       out / INFLIGHT_FILE)

    def _restore(self, ckpt: Checkpoint) -> None:
        if self.policies.adapters is not None:
            self.policies.load_adapters(ckpt.path / "model")
        else:
            loaded = AutoModelForCausalLM.from_pretrained(ckpt.path / "model", dtype=torch.float32)
            self.model.load_state_dict(loaded.state_dict())
        # On the CPU: the RNG states must stay there; optimizer states move to their parameters' device.
        blob = torch.load(ckpt.path / "trainer.pt", weights_only=False, map_location="cpu")
        self.policies.load_state_dict(blob["update"])
        random.setstate(blob["rng"]["python"])
        np.random.set_state(blob["rng"]["numpy"])
        torch.set_rng_state(blob["rng"]["torch"])
        state = json.loads((ckpt.path / "state.json").read_text())
        self.step, self.sampler.cursor = state["step"], state["cursor"]
        self.moments.load_state_dict(state["moments"])
        self.history = [StepRecord.model_validate(r) for r in state["history"]]
        self.audit_totals = state["audit"]
        self.baseline = HeldoutResult.model_validate(state["baseline"]) if state["baseline"] else None
        self.baseline_slices = {k: HeldoutResult.model_validate(v)
                                for k, v in state.get("baseline_slices", {}).items()}
        if (ckpt.path / INFLIGHT_FILE).is_file():
            inflight = torch.load(ckpt.path / INFLIGHT_FILE, weights_only=False, map_location="cpu")
            self._inflight = ([RolloutJob.from_json(j) for j in inflight["jobs"]], inflight["snapshots"])
        self.engine.set_policy_version(str(self.step))
        log.info("resumed", step=self.step, checkpoint=str(ckpt.path), inflight=len(self._inflight[0]))

    def _save(self, trackers: Trackers) -> Checkpoint:
        ckpt = self.checkpoints.save(self.step, self._write_checkpoint, meta={"algorithm": self.spec.name})
        if self.config.tracking.log_checkpoints:
            trackers.log_artifacts(ckpt.path, f"checkpoints/{ckpt.path.name}")
        return ckpt

    # -- one step ------------------------------------------------------------------------------------------

    def _eval_engine(self) -> TokenEngine:
        """The current policy as ``eval.engine`` names it: the trainer's model, or the rollout engine's
        newest published version (the pipeline publishes every update before the next evaluation)."""
        if self.config.eval.engine == "rollout" and self.pipeline is not None:
            return self.pipeline.engine.engine_for(self.pipeline.version)
        return self.engine

    def _evaluate_slices(self, grader: Grader) -> dict[str, HeldoutResult]:
        return asyncio.run(evaluate_slices(self._eval_engine(), self.config, grader, self.data.slices))

    def _evaluate(self, grader: Grader) -> HeldoutResult:
        ev = self.config.eval
        return asyncio.run(
            evaluate_heldout(
                self._eval_engine(),
                self.config.workflow,
                grader,
                self.heldout,
                max_new_tokens=ev.max_new_tokens or self.config.rollout.max_new_tokens,
                temperature=ev.temperature,
                max_rounds=ev.max_rounds,
                seed=derive_seed(self.config.seed, "eval"),
                samples=ev.samples,
            )
        )

    def _audit(self, trajectories: list[Any]) -> dict[str, float]:
        stride = max(1, len(trajectories) // self.config.audit.rows)  # spread over groups and batch positions
        sample = trajectories[::stride][: self.config.audit.rows]
        reports = self.policies.audit(sample, self.tokenizer, self.config.audit_tolerance)
        metrics = {"audit/offending_tokens": 0.0, "audit/max_abs_diff": 0.0}
        for role, report in reports.items():
            for key in ("trajectories", "checked_tokens", "offending_tokens"):
                self.audit_totals[key] += float(getattr(report, key))
            self.audit_totals["max_abs_diff"] = max(self.audit_totals["max_abs_diff"], report.max_abs_diff)
            metrics["audit/offending_tokens"] += float(report.offending_tokens)
            metrics["audit/max_abs_diff"] = max(metrics["audit/max_abs_diff"], report.max_abs_diff)
            if len(reports) > 1 or self.policies.adapters is not None:  # drift per role
                metrics[f"audit/{role}/offending_tokens"] = float(report.offending_tokens)
                metrics[f"audit/{role}/max_abs_diff"] = report.max_abs_diff
        return metrics

    def _warm_start(self, grader: Grader) -> dict[str, float]:
        """The Reviewer's supervised warm start before the first RL step (``training.review_sft``)."""
        cfg = self.config
        return warm_start_reviewer(
            self.engine, self.model, cfg.workflow, grader, self.train_problems, cfg.reviewer_warm_start,
            cfg.seed,
        )

    def train_step(self, grader: Grader, reward_fn: CompositeReward) -> dict[str, float]:
        cfg, step = self.config, self.step
        assert self.pipeline is not None, "train_step runs inside run()"
        start = time.perf_counter()
        produced = self.pipeline.take(step)
        rollout: RolloutBatch = produced.result
        metrics = rollout_metrics(rollout)
        shaped = shape_rewards(episode_rewards(rollout.episodes, cfg.reward), cfg.reward, self.moments)
        metrics.update(review_metrics(rollout.episodes, cfg.reward.review))
        rows = to_trajectories(rollout.episodes, shaped, cfg.rollout.trained_roles, step, cfg.reward.review)
        rows, hygiene = overlong_hygiene(rows, cfg.rollout)
        metrics.update({**hygiene, **rollout.stats})
        rollout_s = time.perf_counter() - start
        sampled_by = produced.job.version
        behaviour = None if sampled_by == step else self.pipeline.snapshot_of(sampled_by)
        if cfg.audit.every and step % cfg.audit.every == 0:
            with self.policies.weights_of(behaviour):  # audit against the weights that sampled
                metrics.update(self._audit(rows))
        update_start = time.perf_counter()
        if self.engine.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.engine.device)
        metrics.update(self.policies.step(self.spec, rows, self.engine.pad_id, step, behaviour))
        self.engine.set_policy_version(str(step + 1))
        update_s = time.perf_counter() - update_start
        sync_s = self.pipeline.advance(step + 1, self._snapshot())
        metrics.update(
            {
                "charts/temperature": produced.job.temperature,
                "seconds/rollout": rollout_s,
                "seconds/update": update_s,
                "seconds/generate": rollout.seconds["generate"],
                "seconds/reward": rollout.seconds["reward"],
                "seconds/sync": sync_s,
                "seconds/train_step": time.perf_counter() - start,
                "charts/tokens_per_s": rollout.generated_tokens / max(rollout.seconds["generate"], 1e-9),
                "charts/samples_per_s": len(rollout.episodes) / max(rollout_s + update_s, 1e-9),
                "charts/samples": float(len(rollout.episodes)),
                "async/staleness_mean": float(step - sampled_by),
                "async/idle_s": produced.trainer_idle_s,
                "async/generator_idle_s": produced.generator_idle_s,
                **_peak_memory(self.engine.device),
            }
        )
        return metrics

    # -- rollouts ------------------------------------------------------------------------------------------

    def _snapshot(self) -> PolicySnapshot:
        """The weights a rollout engine other than the trainer's own needs (none for that one)."""
        rollout = self.config.rollout
        return self.policies.snapshot() if rollout.max_staleness or rollout.engine != "local" else {}

    def _rollout_engine(self) -> RolloutEngine:
        rollout = self.config.rollout
        if rollout.engine == "vllm":
            assert self.policies.adapters is not None  # the config refuses vllm without adapters
            work = self.run_dir / "rollout_engine"
            self.policies.save_model(work / "base", self.tokenizer)  # the frozen base the server loads
            return VLLMRolloutEngine(self.config, work / "base", self.policies.adapters, self.tokenizer, work)
        if rollout.max_staleness:
            return LocalCopyEngine(self.engine, self.policies.adapters)
        return TrainerEngine(self.engine)

    def _start_pipeline(self, grader: Grader, reward_fn: CompositeReward) -> RolloutPipeline:
        cfg = self.config

        def draw(step: int) -> RolloutJob:
            return RolloutJob(step, behaviour_version(step, cfg.rollout.max_staleness),
                              self.sampler.draw(step, cfg.rollout.problems_per_step),
                              temperature_at(step, cfg.steps, cfg.rollout))

        def produce(job: RolloutJob, engine: Any) -> RolloutBatch:
            workflow = step_workflow(cfg.workflow, cfg.rollout.max_new_tokens, job.temperature,
                                     cfg.rollout.top_p)
            seed = derive_seed(cfg.seed, "rollout", job.step)
            rollout = asyncio.run(collect(engine, workflow, grader, job.problems, cfg.rollout.group_size,
                                          seed, reward_fn))
            if cfg.rollout.refill_zero_variance:
                rollout = self._refill(rollout, job, engine, workflow, grader, reward_fn)
            return rollout

        pipeline = RolloutPipeline(self._rollout_engine(), cfg.rollout.max_staleness, cfg.steps, draw,
                                   produce)
        try:
            pending, snapshots = self._inflight
            sync_s = pipeline.start(self.step, self._snapshot(), pending, snapshots)
        except BaseException:
            pipeline.close()
            raise
        log.info("rollout_engine", engine=cfg.rollout.engine, max_staleness=cfg.rollout.max_staleness,
                 sync_s=round(sync_s, 3), resumed_batches=len(pending))
        return pipeline

    def _refill(self, rollout: RolloutBatch, job: RolloutJob, engine: Any, workflow: Any, grader: Grader,
                reward_fn: CompositeReward) -> RolloutBatch:
        """Step ``job``'s batch with its zero-variance groups replaced by groups of extra rollouts (problems
        from ``ProblemSampler.extra``), counted in the batch's ``batch/*`` stats. Where ``max_refill_rounds``
        finds too few, flat groups stay (``batch/flat_kept``): the batch keeps its size."""
        cfg = self.config
        flat = flat_groups([e.group for e in rollout.episodes], episode_rewards(rollout.episodes, cfg.reward))
        episodes = [e for e in rollout.episodes if e.group not in flat]
        tokens, waves = rollout.generated_tokens, rollout.waves
        seconds = dict(rollout.seconds)
        added, rounds = 0, 0
        while added < len(flat) and rounds < cfg.rollout.max_refill_rounds:
            rounds += 1
            problems = self.sampler.extra(job.step, rounds, len(flat) - added)
            extra = asyncio.run(collect(engine, workflow, grader, problems, cfg.rollout.group_size,
                                        derive_seed(cfg.seed, "refill", job.step, rounds), reward_fn))
            tokens, waves = tokens + extra.generated_tokens, waves + extra.waves
            seconds = {k: seconds.get(k, 0.0) + v for k, v in extra.seconds.items()}
            still_flat = flat_groups([e.group for e in extra.episodes],
                                     episode_rewards(extra.episodes, cfg.reward))
            for group in sorted({e.group for e in extra.episodes} - still_flat)[: len(flat) - added]:
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

    # -- the run -------------------------------------------------------------------------------------------

    def run(self) -> TrainingResults:
        """Train, evaluate and save; the global state is restored when it returns or raises. Runs once."""
        if self.scope.closed:
            raise RuntimeError("this Trainer has finished or was closed; build a new one (resume=True "
                               "continues its run)")
        try:
            return self._run()
        finally:
            self.close()

    def _run(self) -> TrainingResults:
        start = time.perf_counter()
        ckpt = resume_point(self.checkpoints) if self.resume else None
        if ckpt is not None:
            self._restore(ckpt)
        trackers = Trackers(self.config.tracking, self.run_dir, resume=self.resume)
        status = "FAILED"
        try:
            if ckpt is None:
                trackers.log_params({"algorithm": self.spec.name, **self.config.model_dump(mode="json")})
                trackers.log_params({"data_sha256": self.data.sha256})
                trackers.log_file(self.run_dir / MANIFEST_FILE)
            with Grader(self.config.workflow.sandbox) as grader:
                reward_fn = CompositeReward(self.config.reward.function, grader=grader)
                self.pipeline = self._start_pipeline(grader, reward_fn)
                try:
                    results = self._loop(grader, reward_fn, trackers, start)
                finally:
                    self.pipeline.close()
            gate = results.gate
            assert gate is not None
            if not gate.passed:
                print(f"gate: the final model is registered without the {CHALLENGER_ALIAS!r} alias: "
                      f"{gate.reason}", file=sys.stderr, flush=True)
            results.registered_model = trackers.log_model(
                self.run_dir / FINAL_MODEL, self.config.tracking.registered_model,
                challenger=gate.passed, tags={"data_sha256": self.data.sha256, **gate.tags()},
            )
            results.mlflow_run_id = trackers.run_id
            results.seconds = time.perf_counter() - start
            results.write()
            status = "FINISHED"
            return results
        except (KeyboardInterrupt, SystemExit):
            # Stopped from outside (Ctrl-C; a sweep's scheduler, whose stop arrives as SystemExit from
            # tune.report while Tune moves on without waiting for this thread): not a failure.
            status = "KILLED"
            raise
        finally:
            trackers.finish(status)

    def _loop(
        self, grader: Grader, reward_fn: CompositeReward, trackers: Trackers, start: float
    ) -> TrainingResults:
        cfg = self.config
        if (cfg.eval.baseline or cfg.gate.enabled) and self.baseline is None and self.step == 0:
            self.baseline = self._evaluate(grader)
            self.baseline_slices = self._evaluate_slices(grader)
            trackers.log_metrics({**self.baseline.metrics(), **slice_metrics(self.baseline_slices)}, step=0)
        if cfg.reviewer_warm_start.enabled and self.step == 0:
            trackers.log_metrics(self._warm_start(grader), step=0)
        early_stop = self.updater.monitor.reason
        columns = (
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[info]}"),
        )
        with Progress(*columns, console=Console(stderr=True), disable=not self.progress) as bar:
            task = bar.add_task(f"{self.spec.name} steps", total=cfg.steps, completed=self.step, info="")
            while self.step < cfg.steps and early_stop is None:
                metrics = self._one_step(grader, reward_fn)
                self.step += 1
                self.history.append(StepRecord(step=self.step, metrics=metrics))
                trackers.log_metrics(metrics, step=self.step)
                bar.update(task, completed=self.step, info=_progress_info(metrics))
                if "kl/ref" in metrics and self.updater.monitor.update(metrics["kl/ref"], self.step):
                    early_stop = self.updater.monitor.reason
                if self.step % cfg.checkpoint.every == 0 or self.step == cfg.steps or early_stop:
                    self._save(trackers)
                if self.on_step is not None:
                    self.on_step(self.step, metrics)
        return self._finish(grader, trackers, start, early_stop)

    def _one_step(self, grader: Grader, reward_fn: CompositeReward) -> dict[str, float]:
        started = time.perf_counter()
        metrics = self.train_step(grader, reward_fn)
        every = self.config.eval.every
        if every and (self.step + 1) % every == 0 and self.step + 1 < self.config.steps:
            result = self._evaluate(grader)
            metrics.update({**result.metrics(), **slice_metrics(self._evaluate_slices(grader)),
                            "seconds/eval": result.seconds})
        metrics["seconds/step"] = time.perf_counter() - started
        return metrics

    def _finish(
        self, grader: Grader, trackers: Trackers, start: float, early_stop: str | None
    ) -> TrainingResults:
        final = self._evaluate(grader)
        final_slices = self._evaluate_slices(grader)
        evaluated = {**final.metrics(), **slice_metrics(final_slices), "seconds/eval": final.seconds}
        trackers.log_metrics(evaluated, step=self.step)
        final_dir = self.run_dir / FINAL_MODEL
        self.policies.save_model(final_dir, self.tokenizer)
        last = dict(self.history[-1].metrics) if self.history else {}
        last.update({**final.metrics(), **slice_metrics(final_slices)})
        summary = {
            "algorithm": self.spec.name,
            "steps": self.step,
            "baseline heldout pass@1": self.baseline.pass_at_1 if self.baseline else None,
            "final heldout pass@1": final.pass_at_1,
            "heldout problems": final.problems,
        }
        history = [*self.history[:-1], StepRecord(step=self.step, metrics=last)]
        if self.baseline is not None:
            history.insert(0, StepRecord(step=0, metrics={"heldout_pass@1": self.baseline.pass_at_1,
                                                          **slice_metrics(self.baseline_slices)}))
        report = write_report(
            history, self.run_dir / "report", f"{self.spec.name} on {self.run_dir.name}", summary
        )
        trackers.log_artifacts(self.run_dir / "report", "report")
        ckpts = self.checkpoints.steps()
        return TrainingResults(
            algorithm=self.spec.name,
            seed=self.config.seed,
            steps=self.step,
            run_dir=self.run_dir,
            final_metrics=last,
            history=self.history,
            heldout_pass_at_1=final.pass_at_1,
            baseline_pass_at_1=self.baseline.pass_at_1 if self.baseline else None,
            heldout_problems=final.problems,
            heldout_by_family=final.by_family,
            baseline_by_family=self.baseline.by_family if self.baseline else {},
            early_stop=early_stop,
            final_model_dir=final_dir,
            checkpoint=self.checkpoints.path_for(ckpts[-1]) if ckpts else None,
            report=report,
            audit=self.audit_totals,
            seconds=time.perf_counter() - start,
            data_sha256=self.data.sha256,
            gate=self._gate(final, final_slices),
            max_staleness=self.config.rollout.max_staleness,
            engine=self.config.rollout.engine,
            samples_per_s=_samples_per_s(self.history),
        )

    def _gate(self, final: HeldoutResult, final_slices: dict[str, HeldoutResult]) -> GateResult:
        """The regression gate's verdict on the held-out set and the gated slices, before vs after."""
        return gate_verdict(self.config.gate, self.baseline, self.baseline_slices, final, final_slices)


def _progress_info(metrics: dict[str, float]) -> str:
    parts = [f"reward {metrics['reward_mean']:.3f}", f"pass {metrics['pass_rate']:.2f}"]
    if "heldout_pass@1" in metrics:
        parts.append(f"heldout {metrics['heldout_pass@1']:.2f}")
    if "kl/ref" in metrics:
        parts.append(f"kl {metrics['kl/ref']:.4f}")
    return "  ".join(parts)


def _samples_per_s(history: list[StepRecord]) -> float | None:
    """Episodes trained on per second of training steps (their rollout waits, updates and syncs)."""
    steps = [r.metrics for r in history if "seconds/train_step" in r.metrics]
    seconds = sum(m["seconds/train_step"] for m in steps)
    return sum(m["charts/samples"] for m in steps) / seconds if seconds else None


def _peak_memory(device: torch.device) -> dict[str, float]:
    """``memory/peak_mb``: this step's peak CUDA allocation, or on the CPU the process's peak RSS so far."""
    if device.type == "cuda":
        return {"memory/peak_mb": torch.cuda.max_memory_allocated(device) / 2**20}
    return {"memory/peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
