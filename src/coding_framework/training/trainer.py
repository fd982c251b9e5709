"""The RL training loop: take a step's batch, audit it, update the policy, publish the new weights; with
held-out evaluation, checkpoints and tracking around it.

Each step's rows come from the batch source (``rollouts.source.BatchSource``: problems drawn, episodes of
the multi-turn training graph sampled on the rollout engine, rewards shaped, batch hygiene applied). The
trainer audits a few rows against the weights that sampled them (``auditor``), updates each trained policy
(``role_policies``, ``update.PolicyUpdate``), bumps the engine's policy version and hands the new weights
back to the source. Everything random is derived from the seed and the step (``algos.seeds``), and the
rest of the state is checkpointed, so ``resume`` continues a killed run exactly (on CPU, with the same
thread count). Rewards that time code (``efficiency``) are the exception: keep their weight at 0 where
bit-exact resumes matter.

The policy samples and trains on ``config.device``, or on the device of the engine passed in. The global
state a run sets (RNG seeds, thread count, progress bars, a frozen heap) lasts from ``Trainer(...)`` to
the end of ``run()`` (or ``close()``) and is then put back (``run.scope.RunScope``). What a run starts
from (spec, device, problems, base model, checkpoint) is resolved in ``run.setup``.

A run on repository tasks (``data.repository``) is the same loop: its episodes come from the repository
graph, rewarded by their hidden tests' verdict (``rollouts.repository``), and its held-out evaluation
measures the resolved rate of the held-out tasks (``heldout_pass@1``), which the gate compares.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM

from coding_framework.config.training import TrainingConfig
from coding_framework.evaluation.traces import TraceRecorder, sample_for_tracing
from coding_framework.grading import Grader
from coding_framework.llm.local import LocalEngine
from coding_framework.logs import get_logger
from coding_framework.models.registry import CHALLENGER_ALIAS
from coding_framework.rewards import CompositeReward
from coding_framework.training.auditor import tally
from coding_framework.training.generator_sft import WarmStartRejected, warm_start_generator
from coding_framework.training.repository_sft import RepositoryWarmStartRejected, warm_start_repository
from coding_framework.training.review_sft import warm_start_reviewer
from coding_framework.training.role_policies import RolePolicies
from coding_framework.training.rollouts.episodes import Episode
from coding_framework.training.rollouts.source import BatchSource
from coding_framework.training.run.checkpoint import Checkpoint, CheckpointManager
from coding_framework.training.run.data import MANIFEST_FILE, prepare_data
from coding_framework.training.run.evals import (
    evaluate_policy,
    evaluate_repository_policy,
    evaluate_slices,
    slice_metrics,
)
from coding_framework.training.run.gate import gate_verdict
from coding_framework.training.run.heldout import HeldoutResult
from coding_framework.training.run.progress import peak_memory, step_info, step_progress
from coding_framework.training.run.report import write_run_report
from coding_framework.training.run.results import StepRecord, TrainingResults, samples_per_s
from coding_framework.training.run.scope import RunScope, rng_state, set_rng_state
from coding_framework.training.run.setup import (
    check_adapters,
    check_precision,
    check_run_dir,
    load_engine,
    resolve_spec,
    resume_point,
    starting_model,
    trained_model,
    training_device,
)
from coding_framework.training.run.tracking import Trackers
from coding_framework.training.trajectory import Trajectory

__all__ = ["FINAL_MODEL", "Trainer"]

log = get_logger(__name__)

FINAL_MODEL = "final_model"
WARM_START_MODEL = "warm_start_model"
WARM_START_FILE = "warm_start.json"


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
        check_run_dir(self.run_dir, config, self.resume)
        self.data.write_manifest(self.run_dir)
        self.scope.seed(config.seed, config.threads)
        if engine is None:
            assert start is not None and start.model_dir is not None and device is not None
            engine = load_engine(start.model_dir, device, config)
        self.engine = engine
        self.model = trained_model(engine, config)
        check_precision(config, engine.device)
        self.tokenizer = engine.tokenizer
        self.train_problems, self.heldout = self.data.train, self.data.heldout
        self.policies = RolePolicies(engine, self.model, self.spec, config)
        if start is not None and check_adapters(start, config):
            assert start.model_dir is not None
            self.policies.load_adapters(start.model_dir)  # continue the trained adapters, not fresh ones
        self.source = BatchSource(config, self.data.tasks, self.data.weights, engine, self.policies,
                                  self.run_dir / "rollout_engine")
        self.updater = self.policies.primary
        self.checkpoints = CheckpointManager(self.run_dir / "checkpoints", config.checkpoint.keep_last)
        self.history: list[StepRecord] = []
        self.baseline: HeldoutResult | None = None
        self.baseline_slices: dict[str, HeldoutResult] = {}
        self.audit_totals = {"trajectories": 0.0, "checked_tokens": 0.0, "offending_tokens": 0.0,
                             "max_abs_diff": 0.0}
        self.traces: TraceRecorder | None = None
        self.step = 0
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

    # -- checkpoints ---------------------------------------------------------------------------------------

    def _write_checkpoint(self, out: Path) -> None:
        self.policies.save_model(out / "model", self.tokenizer)
        torch.save({"update": self.policies.state_dict(), "rng": rng_state()}, out / "trainer.pt")
        state = {
            "step": self.step,
            **self.source.state_dict(),
            "history": [r.model_dump() for r in self.history],
            "audit": self.audit_totals,
            "baseline": self.baseline.model_dump() if self.baseline else None,
            "baseline_slices": {k: v.model_dump() for k, v in self.baseline_slices.items()},
        }
        (out / "state.json").write_text(json.dumps(state) + "\n")
        self.source.save(out)

    def _restore(self, ckpt: Checkpoint) -> None:
        if self.policies.adapters is not None:
            self.policies.load_adapters(ckpt.path / "model")
        else:
            loaded = AutoModelForCausalLM.from_pretrained(ckpt.path / "model", dtype=torch.float32)
            self.model.load_state_dict(loaded.state_dict())
        # On the CPU: the RNG states must stay there; optimizer states move to their parameters' device.
        blob = torch.load(ckpt.path / "trainer.pt", weights_only=False, map_location="cpu")
        self.policies.load_state_dict(blob["update"])
        set_rng_state(blob["rng"])
        state = json.loads((ckpt.path / "state.json").read_text())
        self.step = state["step"]
        self.source.load_state_dict(state)
        self.history = [StepRecord.model_validate(r) for r in state["history"]]
        self.audit_totals = state["audit"]
        self.baseline = HeldoutResult.model_validate(state["baseline"]) if state["baseline"] else None
        self.baseline_slices = {k: HeldoutResult.model_validate(v)
                                for k, v in state.get("baseline_slices", {}).items()}
        inflight = self.source.load(ckpt.path)
        self.engine.set_policy_version(str(self.step))
        log.info("resumed", step=self.step, checkpoint=str(ckpt.path), inflight=inflight)

    def _save(self, trackers: Trackers) -> Checkpoint:
        ckpt = self.checkpoints.save(self.step, self._write_checkpoint, meta={"algorithm": self.spec.name})
        if self.config.tracking.log_checkpoints:
            trackers.log_artifacts(ckpt.path, f"checkpoints/{ckpt.path.name}")
            trackers.prune_artifacts("checkpoints", {self.checkpoints.path_for(s).name
                                                     for s in self.checkpoints.steps()})
        return ckpt

    # -- one step ------------------------------------------------------------------------------------------

    def _evaluate(self, grader: Grader) -> tuple[HeldoutResult, dict[str, HeldoutResult]]:
        """The held-out set's result and each benchmark slice's, on the policy ``eval.engine`` names."""
        engine = self.source.eval_engine()
        repository = self.data.repository
        if repository is not None:
            heldout = asyncio.run(evaluate_repository_policy(engine, self.config, grader, repository.heldout))
        else:
            heldout = asyncio.run(evaluate_policy(engine, self.config, grader, self.heldout))
        return heldout, asyncio.run(evaluate_slices(engine, self.config, grader, self.data.slices))

    def _audit(self, rows: list[Trajectory]) -> dict[str, float]:
        stride = max(1, len(rows) // self.config.audit.rows)  # spread over groups and batch positions
        sample = rows[::stride][: self.config.audit.rows]
        reports = self.policies.audit(sample, self.tokenizer, self.config.audit_tolerance)
        return tally(reports, self.audit_totals, len(reports) > 1 or self.policies.adapters is not None)

    def train_step(self) -> dict[str, float]:
        """One step inside ``run()``: take its batch, audit it, update, and publish the new weights."""
        cfg, step = self.config, self.step
        start = time.perf_counter()
        batch = self.source.take(step)
        rollout, metrics, produced = batch.rollout, batch.metrics, batch.produced
        self._trace(rollout.episodes, step + 1)  # numbered as the step's metrics are
        rollout_s = time.perf_counter() - start
        audit_start = time.perf_counter()
        if cfg.audit.every and step % cfg.audit.every == 0:
            with self.policies.weights_of(batch.behaviour):  # audit against the weights that sampled
                metrics.update(self._audit(batch.rows))
        audit_s = time.perf_counter() - audit_start
        update_start = time.perf_counter()
        if self.engine.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.engine.device)
        metrics.update(self.policies.step(self.spec, batch.rows, self.engine.pad_id, step, batch.behaviour))
        self.engine.set_policy_version(str(step + 1))
        update_s = time.perf_counter() - update_start
        sync_s = self.source.advance(step + 1)
        metrics.update(
            {
                "charts/temperature": produced.job.temperature,
                "seconds/rollout": rollout_s,
                "seconds/update": update_s,
                "seconds/audit": audit_s,
                "seconds/generate": rollout.seconds["generate"],
                "seconds/reward": rollout.seconds["reward"],
                "seconds/sync": sync_s,
                "seconds/train_step": time.perf_counter() - start,
                "charts/tokens_per_s": rollout.generated_tokens / max(rollout.seconds["generate"], 1e-9),
                "charts/samples_per_s": len(rollout.episodes) / max(rollout_s + update_s, 1e-9),
                "charts/samples": float(len(rollout.episodes)),
                "async/staleness_mean": float(step - produced.job.version),
                "async/idle_s": produced.trainer_idle_s,
                "async/generator_idle_s": produced.generator_idle_s,
                **peak_memory(self.engine.device),
            }
        )
        return metrics

    def _trace(self, episodes: Sequence[Episode], step: int) -> None:
        """Record a sample of the step's episodes as MLflow traces, written in the background."""
        if self.traces is None:
            return
        tracking = self.config.tracking
        for i in sample_for_tracing(len(episodes), step=step, every=tracking.trace_every,
                                    per_step=tracking.trace_episodes, seed=self.config.seed):
            episode = episodes[i]
            self.traces.submit(episode.state, kind="repository" if "task" in episode.state else "function",
                               mode="training", step=step, reward=episode.reward.value,
                               tags={"group": str(episode.group)})

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
        self.traces = TraceRecorder(uri=trackers.mlflow.uri, run_id=trackers.run_id)
        status = "FAILED"
        try:
            if ckpt is None:
                trackers.log_params({"algorithm": self.spec.name, **self.config.model_dump(mode="json")})
                trackers.log_params({"data_sha256": self.data.sha256})
                trackers.log_file(self.run_dir / MANIFEST_FILE)
                if self.config.warm_start.enabled or self.config.repository_warm_start.enabled:
                    self._warm_start(trackers)
            with Grader(self.config.workflow.sandbox) as grader:
                reward_fn = CompositeReward(self.config.reward.function, grader=grader)
                try:
                    self.source.start(grader, reward_fn, self.step)
                    results = self._loop(grader, trackers, start)
                finally:
                    self.source.close()
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
            self.traces.close()
            self.traces = None
            trackers.finish(status)

    def warm_start_only(self) -> dict[str, float]:
        """Run the Generator's warm start alone (``warm_start``, or ``repository_warm_start`` on repository
        tasks; enabled or not) and keep its model in ``run_dir/warm_start_model``: the non-RL baseline. Its
        metrics, also in ``warm_start.json``."""
        trackers = Trackers(self.config.tracking, self.run_dir, resume=False)
        status = "FAILED"
        try:
            trackers.log_params({"algorithm": "warm_start", **self.config.model_dump(mode="json")})
            metrics = self._warm_start(trackers)
            status = "FINISHED"
            return metrics
        finally:
            trackers.finish(status)
            self.close()

    def _warm_start(self, trackers: Trackers) -> dict[str, float]:
        """Fine-tune the Generator before RL, on passing programs or (repository tasks) gold demonstrations;
        the model it leaves is kept (also when its gate refuses it, for inspection), its metrics logged at
        step 0."""
        cfg, repository = self.config, self.data.repository
        try:
            if repository is not None:
                metrics = warm_start_repository(self.engine, self.model, repository.train, repository.heldout,
                                                cfg.workflow.repository, cfg.repository_warm_start, cfg.seed,
                                                self.progress)
            else:
                metrics = warm_start_generator(self.engine, self.model, self.data.warm_start or
                                               self.train_problems, self.heldout, cfg.warm_start, cfg.seed,
                                               self.progress)
        except (WarmStartRejected, RepositoryWarmStartRejected) as exc:
            self.policies.save_model(self.run_dir / WARM_START_MODEL, self.tokenizer)
            if isinstance(exc, RepositoryWarmStartRejected):  # the CLI's one-line refusal names the model
                raise WarmStartRejected(str(exc)) from None
            raise
        self.policies.save_model(self.run_dir / WARM_START_MODEL, self.tokenizer)
        (self.run_dir / WARM_START_FILE).write_text(json.dumps(metrics, indent=2) + "\n")
        trackers.log_metrics(metrics, step=0)
        return metrics

    def _loop(self, grader: Grader, trackers: Trackers, start: float) -> TrainingResults:
        cfg = self.config
        if (cfg.eval.baseline or cfg.gate.enabled) and self.baseline is None and self.step == 0:
            self.baseline, self.baseline_slices = self._evaluate(grader)
            trackers.log_metrics({**self.baseline.metrics(), **slice_metrics(self.baseline_slices)}, step=0)
        if cfg.reviewer_warm_start.enabled and self.step == 0:
            trackers.log_metrics(warm_start_reviewer(
                self.engine, self.model, cfg.workflow, grader, self.train_problems, cfg.reviewer_warm_start,
                cfg.seed), step=0)
        early_stop = self.updater.monitor.reason
        with step_progress(self.progress) as bar:
            task = bar.add_task(f"{self.spec.name} steps", total=cfg.steps, completed=self.step, info="")
            while self.step < cfg.steps and early_stop is None:
                metrics = self._one_step(grader)
                self.step += 1
                self.history.append(StepRecord(step=self.step, metrics=metrics))
                logged = time.perf_counter()
                trackers.log_metrics(metrics, step=self.step)
                bar.update(task, completed=self.step, info=step_info(metrics))
                saved = time.perf_counter()
                if "kl/ref" in metrics and self.updater.monitor.update(metrics["kl/ref"], self.step):
                    early_stop = self.updater.monitor.reason
                if self.step % cfg.checkpoint.every == 0 or self.step == cfg.steps or early_stop:
                    self._save(trackers)
                # After the tracker has the step: these two reach the run's history (results.json) only.
                after = {"seconds/log": saved - logged, "seconds/checkpoint": time.perf_counter() - saved}
                metrics.update(after)
                self.history[-1].metrics.update(after)
                if self.on_step is not None:
                    self.on_step(self.step, metrics)
        return self._finish(grader, trackers, start, early_stop)

    def _one_step(self, grader: Grader) -> dict[str, float]:
        started = time.perf_counter()
        metrics = self.train_step()
        every = self.config.eval.every
        if every and (self.step + 1) % every == 0 and self.step + 1 < self.config.steps:
            result, slices = self._evaluate(grader)
            metrics.update({**result.metrics(), **slice_metrics(slices), "seconds/eval": result.seconds})
        metrics["seconds/step"] = time.perf_counter() - started
        return metrics

    def _finish(
        self, grader: Grader, trackers: Trackers, start: float, early_stop: str | None
    ) -> TrainingResults:
        final, final_slices = self._evaluate(grader)
        evaluated = {**final.metrics(), **slice_metrics(final_slices), "seconds/eval": final.seconds}
        trackers.log_metrics(evaluated, step=self.step)
        final_dir = self.run_dir / FINAL_MODEL
        self.policies.save_model(final_dir, self.tokenizer)
        last = dict(self.history[-1].metrics) if self.history else {}
        last.update({**final.metrics(), **slice_metrics(final_slices)})
        baseline = self.baseline
        report = write_run_report(self.run_dir / "report", f"{self.spec.name} on {self.run_dir.name}",
                                  self.spec.name, self.step, self.history, last, baseline,
                                  self.baseline_slices, final)
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
            baseline_pass_at_1=baseline.pass_at_1 if baseline else None,
            heldout_problems=final.problems,
            heldout_by_family=final.by_family,
            baseline_by_family=baseline.by_family if baseline else {},
            early_stop=early_stop,
            final_model_dir=final_dir,
            checkpoint=self.checkpoints.path_for(ckpts[-1]) if ckpts else None,
            report=report,
            audit=self.audit_totals,
            seconds=time.perf_counter() - start,
            data_sha256=self.data.sha256,
            gate=gate_verdict(self.config.gate, baseline, self.baseline_slices, final, final_slices),
            max_staleness=self.config.rollout.max_staleness,
            engine=self.config.rollout.engine,
            samples_per_s=samples_per_s(self.history),
        )

