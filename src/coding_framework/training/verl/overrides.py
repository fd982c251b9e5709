"""Our ``TrainingConfig`` and ``VerlConfig`` as verl's hydra overrides (``key=value`` for ``main_ppo``).

Pure mapping, no I/O: each function returns the verl keys of one concern, ``verl_overrides`` joins them,
``hydra_args`` renders them. On GPUs the run is verl's V1 trainer (``trainer.use_v1``: ``sync`` for
``max_staleness`` 0, ``separate_async`` bounded to K + 1 model versions above); on CPU (``device: cpu``,
``_cpu``) the legacy synchronous one. Every ``TrainingConfig`` field is in ``MAPPED`` or ``NOT_APPLIED``; a
setting verl cannot express is an error where a substitute would change the numerics silently (a
`linear` schedule, no gradient clipping, per-role adapters, the Reviewer's warm start, a not-applied field
set away from its default that changes what is learned), a warning otherwise (``not_applied``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from coding_framework.config.errors import ConfigError
from coding_framework.config.policies import GENERATOR_ROLE, REVIEWER_ROLE
from coding_framework.config.training import OffPolicyCorrection, TrainingConfig
from coding_framework.config.verl import FSDPSection, VerlConfig
from coding_framework.training.algos.algorithms import AlgorithmSpec

__all__ = [
    "MAIN_PPO", "OFF_POLICY_CORRECTIONS", "V1_MODES", "OffPolicy", "VerlEntry", "VerlInputs",
    "VerlMappingError", "hydra_args", "not_applied", "off_policy", "off_policy_overrides", "uses_v1",
    "verl_entry", "verl_overrides",
]

Overrides = dict[str, Any]
OFF_POLICY_CORRECTIONS: tuple[str, ...] = get_args(OffPolicyCorrection)
_CORRECTION = "algorithm.rollout_correction"
_SCHEDULES = {"constant": "constant", "cosine": "cosine"}
_PLAIN = re.compile(r"^[A-Za-z0-9_./:@+-]+$")


class VerlMappingError(ValueError):
    """A setting of ours that verl cannot express; the message names the field and the fix."""


@dataclass(frozen=True)
class VerlInputs:
    """The files and places a verl run reads: written by the launcher before the overrides are built."""

    model_dir: Path
    run_dir: Path
    train_file: Path
    val_file: Path
    workflow_files: Mapping[str, Path]
    agent_loop_config: Path | None
    mlflow_uri: str
    adapter_dir: Path | None = None  # the starting model's shared LoRA adapter (`adapters/policy`), if any
    pythonpath: str | None = None  # where Ray's workers import this package from (the CPU path sets it)
    mlflow_run_id: str | None = None  # verl's trainer logs into this MLflow run (else a new one)
    agent_loop: str = "coding_framework"  # the loop the rows name (repository tasks: their own loop's)


@dataclass(frozen=True)
class VerlEntry:
    """A verl program: the module ``python -m`` runs, where its hydra config lives, and what it needs."""

    module: str
    config_package: str  # the package whose ``config/`` folder holds ``config_name``
    config_name: str
    args: tuple[str, ...] = ()  # hydra overrides the program itself needs, before ours
    standalone_rollout: bool = False  # its main copies `rollout.{nnodes,n_gpus_per_node}` into the rollout's


MAIN_PPO = VerlEntry("verl.trainer.main_ppo", "verl.trainer", "ppo_trainer")
V1_MODES = ("sync", "separate_async")  # verl's V1 trainer modes we map K to (colocate_async: an override)


@dataclass(frozen=True)
class OffPolicy:
    """Bounded staleness and its correction: ours are ``rollout.max_staleness``,
    ``algo.off_policy_correction``, ``algo.tis_cap`` and ``algo.mis_bounds`` (see ``off_policy``)."""

    max_staleness: int = 0
    correction: str = "none"
    tis_cap: float = 2.0
    mis_bounds: tuple[float, float] = (0.5, 2.0)
    v1: bool = True  # verl's V1 trainer (trainer.use_v1); the CPU path runs the legacy one (see `uses_v1`)

    def __post_init__(self) -> None:
        if self.max_staleness < 0:
            raise ConfigError(f"max_staleness must be an integer >= 0, got {self.max_staleness}")
        if self.correction not in OFF_POLICY_CORRECTIONS:
            raise ConfigError(f"off_policy_correction {self.correction!r} is not one of "
                              f"{', '.join(OFF_POLICY_CORRECTIONS)}")


def off_policy(cfg: TrainingConfig, max_staleness: int | None = None,
               correction: str | None = None) -> OffPolicy:
    """The run's staleness and correction: the training YAML's, each replaced by the flag's where given."""
    rollout, algo = cfg.rollout, cfg.algo
    return OffPolicy(
        max_staleness=rollout.max_staleness if max_staleness is None else max_staleness,
        correction=algo.off_policy_correction if correction is None else correction,
        tis_cap=algo.tis_cap, mis_bounds=(algo.mis_bounds[0], algo.mis_bounds[1]), v1=uses_v1(cfg),
    )


def uses_v1(cfg: TrainingConfig) -> bool:
    """verl's V1 trainer on GPUs; on CPU the legacy one (``main_ppo_v0``): V1 hands every batch through
    TransferQueue and drives its rollout through ``AgentLoopManagerTQ``, neither of which the token-server
    rollout and its audit are built on (docs/scale_out.md, "The V1 trainer")."""
    return cfg.device != "cpu"


def verl_entry(off: OffPolicy) -> VerlEntry:
    """The program that runs every mapping: ``main_ppo`` (which runs the V1 trainer or the legacy one)."""
    del off
    return MAIN_PPO


def _staleness(off: OffPolicy, verl: VerlConfig, minibatches: int = 1) -> Overrides:
    """K as verl's V1 trainer: a trajectory may span at most K + 1 model versions
    (``trainer.v1.sampler.max_off_policy_threshold``, strategy ``wait``: sampling waits rather than drop a
    stale prompt, so every prompt drawn is trained on, as in our trainer). K = 0 is the ``sync`` mode; K >= 1
    is ``separate_async``: the rollout runs on GPUs of its own (half of each node's), K batches ahead
    (``num_warmup_batches``), weights pushed over NCCL after each of the ``minibatches`` updates of a step
    (``parameter_sync_step``). The legacy trainer (the CPU path) trains synchronously only."""
    if not off.v1:
        if off.max_staleness:
            raise VerlMappingError(f"max_staleness {off.max_staleness}: the CPU path runs verl's legacy "
                                   "synchronous trainer (see docs/scale_out.md, 'The V1 trainer'); use "
                                   "--max-staleness 0, or `coding-framework train`")
        return {"trainer.use_v1": False}
    sampler = "trainer.v1.sampler"
    out: Overrides = {"trainer.use_v1": True, f"{sampler}.max_off_policy_threshold": off.max_staleness + 1,
                      f"{sampler}.max_off_policy_strategy": "wait"}
    if off.max_staleness == 0:
        return {**out, "trainer.v1.trainer_mode": "sync"}
    gpus = verl.cluster.gpus_per_node
    rollout_gpus = gpus // 2
    if rollout_gpus < 1 or rollout_gpus % verl.rollout.tensor_parallel_size:
        raise VerlMappingError(
            f"max_staleness {off.max_staleness} runs verl's separate_async trainer, whose rollout takes GPUs "
            f"of its own (half of cluster.gpus_per_node={gpus}): that half must be a multiple of "
            f"rollout.tensor_parallel_size={verl.rollout.tensor_parallel_size} and at least 1")
    mode = "trainer.v1.separate_async"
    return {
        **out, "trainer.v1.trainer_mode": "separate_async",
        f"{mode}.num_warmup_batches": off.max_staleness,
        f"{mode}.parameter_sync_step": minibatches,
        "actor_rollout_ref.hybrid_engine": False,
        "actor_rollout_ref.rollout.nnodes": verl.cluster.nnodes,
        "actor_rollout_ref.rollout.n_gpus_per_node": rollout_gpus,
        "trainer.n_gpus_per_node": gpus - rollout_gpus,
        "actor_rollout_ref.rollout.checkpoint_engine.backend": "nccl",
        # Bypass mode would swap the algorithm's policy loss for PPO-clip against the rollout's logprobs and
        # ignore IS weights; decoupled mode keeps ours and recomputes the behaviour policy's logprobs.
        f"{_CORRECTION}.bypass_mode": False,
    }


def _correction(off: OffPolicy) -> Overrides:
    """`tis`: verl's token-level truncated IS; `mis`: its sequence-level geometric rejection
    (`seq_mean_k1`)."""
    if off.correction == "tis":
        return {f"{_CORRECTION}.rollout_is": "token", f"{_CORRECTION}.rollout_is_threshold": off.tis_cap,
                f"{_CORRECTION}.rollout_rs": None}
    if off.correction == "mis":
        low, high = off.mis_bounds
        # verl's k1 statistic is the mean of -log(pi_train / pi_rollout), kept within [log lower, log upper]:
        # our bounds on the geometric-mean ratio itself are verl's reciprocals, swapped.
        return {f"{_CORRECTION}.rollout_is": None, f"{_CORRECTION}.rollout_rs": "seq_mean_k1",
                f"{_CORRECTION}.rollout_rs_threshold": f"{1 / high!r}_{1 / low!r}"}
    return {}


def off_policy_overrides(off: OffPolicy, verl: VerlConfig, minibatches: int = 1) -> Overrides:
    """The verl keys the trainer (V1 or legacy), ``max_staleness`` and the correction set."""
    return {**_staleness(off, verl, minibatches), **_correction(off)}


def _algorithm(spec: AlgorithmSpec) -> Overrides:
    actor = "actor_rollout_ref.actor"
    return {
        "algorithm.adv_estimator": spec.adv_estimator,
        "algorithm.norm_adv_by_std_in_grpo": spec.norm_adv_by_std,
        "algorithm.gamma": spec.gamma,
        "algorithm.lam": spec.lam,
        f"{actor}.policy_loss.loss_mode": spec.policy_loss,
        f"{actor}.loss_agg_mode": spec.loss_agg_mode,
        f"{actor}.clip_ratio_low": spec.clip_ratio_low,
        f"{actor}.clip_ratio_high": spec.clip_ratio_high,
        f"{actor}.clip_ratio_c": spec.clip_ratio_c,
        "critic.enable": spec.needs_critic,
        "critic.cliprange_value": spec.cliprange_value,
    }


def _kl(cfg: TrainingConfig) -> Overrides:
    kl = cfg.kl
    return {
        "actor_rollout_ref.actor.use_kl_loss": kl.mode == "loss",
        "actor_rollout_ref.actor.kl_loss_coef": kl.coef,
        "actor_rollout_ref.actor.kl_loss_type": kl.estimator,
        "algorithm.use_kl_in_reward": kl.mode == "reward",
        "algorithm.kl_penalty": kl.estimator,
        "algorithm.kl_ctrl.type": kl.controller,
        "algorithm.kl_ctrl.kl_coef": kl.coef,
        "algorithm.kl_ctrl.target_kl": kl.target_kl,
        "algorithm.kl_ctrl.horizon": kl.horizon,
    }


def _optim(cfg: TrainingConfig) -> Overrides:
    optim = cfg.optim
    if optim.schedule not in _SCHEDULES:
        raise VerlMappingError(f"optim.schedule {optim.schedule!r} has no verl scheduler; verl has "
                               f"{sorted(_SCHEDULES)}: set optim.schedule to one of them")
    if optim.grad_clip is None:
        raise VerlMappingError("optim.grad_clip: null (no clipping) has no verl equivalent; set a norm")
    out: Overrides = {}
    for role, lr in (("actor_rollout_ref.actor", optim.lr), ("critic", optim.critic_lr)):
        out.update({
            f"{role}.optim.lr": lr,
            f"{role}.optim.weight_decay": optim.weight_decay,
            f"{role}.optim.betas": list(optim.betas),
            f"{role}.optim.lr_warmup_steps": optim.warmup_steps,
            f"{role}.optim.lr_scheduler_type": _SCHEDULES[optim.schedule],
            f"{role}.optim.min_lr_ratio": optim.min_lr_ratio,
            f"{role}.optim.clip_grad": optim.grad_clip,
        })
    # verl's AdamW takes torch's eps (1e-8) unless told; ours is `optim.eps` (the policy's only).
    out["actor_rollout_ref.actor.optim.override_optimizer_config"] = {"eps": optim.eps}
    out["actor_rollout_ref.actor.ppo_epochs"] = cfg.algo.epochs
    out["critic.ppo_epochs"] = cfg.algo.epochs
    out["actor_rollout_ref.actor.entropy_coeff"] = cfg.algo.entropy_coef
    return out


def _llm_roles(cfg: TrainingConfig) -> list[str]:
    """The roles whose calls reach the policy in an episode: the Generator, and an LLM Reviewer."""
    llm_reviewer = cfg.workflow.agents.reviewer.backend == "llm"
    return [GENERATOR_ROLE, *([REVIEWER_ROLE] if llm_reviewer else [])]


def _policies(cfg: TrainingConfig, inputs: VerlInputs) -> Overrides:
    """Which weights train, as verl's FSDP LoRA (``actor_rollout_ref.model.lora_*``). `full` is verl's
    default full fine-tune; `shared_lora` is verl's one adapter on the frozen base (rank, alpha and
    targets as ours; its learning rate is ``optim.lr`` in both trainers; ``adapter_dir``: the starting
    model's adapter, continued). verl's rollout runs every call through that adapter, so every role that
    calls the policy must share it. `per_role_lora` and both warm starts have no verl form."""
    policies = cfg.policies
    if cfg.reviewer_warm_start.enabled:
        raise VerlMappingError("reviewer_warm_start.enabled: verl's trainer has no supervised warm start of "
                               "the Reviewer; run it with `coding-framework train`, or disable it")
    if cfg.warm_start.enabled:
        raise VerlMappingError("warm_start.enabled: verl's trainer has no supervised warm start; run "
                               "`coding-framework train --warm-start-only --run-dir D` and start verl from "
                               "D/warm_start_model (model: D/warm_start_model), or disable it")
    if cfg.repository_warm_start.enabled:
        raise VerlMappingError("repository_warm_start.enabled: verl's trainer has no supervised warm "
                               "start; run `coding-framework train --warm-start-only --run-dir D` and start "
                               "verl from "
                               "D/warm_start_model (model: D/warm_start_model), or disable it")
    if policies.mode == "per_role_lora":
        raise VerlMappingError("policies.mode per_role_lora: verl trains one policy with one optimizer, and "
                               "per-role adapters each need their own optimizer and rows; use shared_lora "
                               "or full, or train per role with `coding-framework train`")
    if policies.mode == "full":
        return {}
    on_base = [r for r in _llm_roles(cfg) if r not in policies.roles]
    if on_base:
        raise VerlMappingError(f"policies.roles {policies.roles} leave {on_base} on the base, but verl's "
                               f"rollout runs every call through its one adapter; add {on_base} to "
                               "policies.roles")
    model = "actor_rollout_ref.model"
    out: Overrides = {
        f"{model}.lora_rank": policies.rank,
        f"{model}.lora_alpha": policies.alpha,
        f"{model}.target_modules": list(policies.target_modules),
    }
    if inputs.adapter_dir is not None:
        out[f"{model}.lora_adapter_path"] = str(inputs.adapter_dir)
    return out


def _fsdp(fsdp: FSDPSection, problems_per_step: int, minibatches: int) -> Overrides:
    """The FSDP engine of the actor and critic, and the batch split: a mini-batch (one optimizer step) is
    ``problems_per_step / minibatches`` prompts; each GPU runs it in micro-batches (gradient accumulation)."""
    engine = {
        "strategy": fsdp.strategy,
        "reshard_after_forward": fsdp.full_shard,
        "fsdp_size": fsdp.fsdp_size,
        "param_offload": fsdp.param_offload,
        "optimizer_offload": fsdp.optimizer_offload,
        "model_dtype": fsdp.model_dtype,
    }
    precision = fsdp.mixed_precision.model_dump()
    out: Overrides = {}
    # The actor's engine section is `fsdp_config`, the critic's `fsdp` (verl's own naming).
    for role, section in (("actor_rollout_ref.actor", "fsdp_config"), ("critic", "fsdp")):
        out[f"{role}.strategy"] = fsdp.strategy
        out.update({f"{role}.{section}.{k}": v for k, v in engine.items()})
        out[f"+{role}.{section}.mixed_precision"] = precision
        out[f"{role}.ppo_mini_batch_size"] = max(1, problems_per_step // minibatches)
        out[f"{role}.ppo_micro_batch_size_per_gpu"] = fsdp.micro_batch_size_per_gpu
    out["actor_rollout_ref.ref.fsdp_config.param_offload"] = True
    # the reference scores in the actor's precision: verl's default for an unset section is bf16 parameters,
    # which put a KL of ~3e-5 between the fp32 actor and its own starting weights on the CPU
    out["actor_rollout_ref.ref.fsdp_config.model_dtype"] = fsdp.model_dtype
    out["+actor_rollout_ref.ref.fsdp_config.mixed_precision"] = precision
    for role in ("ref", "rollout"):
        out[f"actor_rollout_ref.{role}.log_prob_micro_batch_size_per_gpu"] = (
            fsdp.log_prob_micro_batch_size_per_gpu)
    out["actor_rollout_ref.model.enable_gradient_checkpointing"] = fsdp.gradient_checkpointing
    return out


def _rollout(cfg: TrainingConfig, verl: VerlConfig, inputs: VerlInputs) -> Overrides:
    rollout = "actor_rollout_ref.rollout"
    out: Overrides = {
        f"{rollout}.name": verl.rollout.name,
        f"{rollout}.mode": "async",
        f"{rollout}.calculate_log_probs": True,
        f"{rollout}.n": cfg.rollout.group_size,
        f"{rollout}.temperature": cfg.rollout.temperature,
        f"{rollout}.top_p": cfg.rollout.top_p,
        f"{rollout}.tensor_model_parallel_size": verl.rollout.tensor_parallel_size,
        f"{rollout}.gpu_memory_utilization": verl.rollout.gpu_memory_utilization,
        f"{rollout}.max_num_seqs": verl.rollout.max_num_seqs,
        f"{rollout}.agent.num_workers": verl.rollout.agent_workers,
        f"{rollout}.agent.default_agent_loop": inputs.agent_loop,
        "data.max_prompt_length": verl.rollout.prompt_length,
        "data.max_response_length": verl.rollout.response_length,
        "data.filter_overlong_prompts": True,
        # CodingAgentLoop returns each episode's reward (verl then calls no reward function): one reward
        # worker, idle, instead of verl's default 8 processes.
        "reward.num_workers": 1,
    }
    if inputs.agent_loop_config is not None:
        out[f"{rollout}.agent.agent_loop_config_path"] = str(inputs.agent_loop_config)
    return out


def _data_and_model(cfg: TrainingConfig, inputs: VerlInputs) -> Overrides:
    out: Overrides = {
        "actor_rollout_ref.model.path": str(inputs.model_dir),
        "critic.model.path": str(inputs.model_dir),
        "data.train_files": str(inputs.train_file),
        "data.val_files": str(inputs.val_file),
        "data.train_batch_size": cfg.rollout.problems_per_step,
        "data.seed": cfg.seed,
    }
    # CodingAgentLoop reads these on every worker; the reward it returns is verl's `reward_score`.
    for key, path in inputs.workflow_files.items():
        out[f"+coding_framework.{key}"] = str(path)
    if len(cfg.rollout.trained_roles) > 1:
        raise VerlMappingError(f"rollout.trained_roles {cfg.rollout.trained_roles}: verl trains one role's "
                               "rows with one policy; train one role, or use `coding-framework train`")
    out["+coding_framework.trained_role"] = cfg.rollout.trained_roles[0]
    out["+coding_framework.round_penalty"] = cfg.reward.round_penalty
    return out


def _trainer(cfg: TrainingConfig, verl: VerlConfig, inputs: VerlInputs) -> Overrides:
    out: Overrides = {
        "trainer.nnodes": verl.cluster.nnodes,
        "trainer.n_gpus_per_node": verl.cluster.gpus_per_node,
        "trainer.total_training_steps": cfg.steps,
        "trainer.save_freq": cfg.checkpoint.every,
        "trainer.max_actor_ckpt_to_keep": cfg.checkpoint.keep_last,
        "trainer.max_critic_ckpt_to_keep": cfg.checkpoint.keep_last,
        "trainer.default_local_dir": str(inputs.run_dir / "checkpoints"),
        # Always auto: a run directory that holds checkpoints without --resume is refused before verl starts
        # (run.run_verl), and a resumed run's MLflow params must equal the first attempt's.
        "trainer.resume_mode": "auto",
        "trainer.test_freq": cfg.eval.every if cfg.eval.every > 0 else -1,
        "trainer.val_before_train": cfg.eval.baseline,
        "trainer.project_name": cfg.tracking.experiment,
        "trainer.experiment_name": inputs.run_dir.name,
        "trainer.logger": list(verl.logger),
        "trainer.rollout_data_dir": str(inputs.run_dir / "rollouts"),
    }
    if verl.cluster.ray_address:
        out["+ray_kwargs.ray_init.address"] = verl.cluster.ray_address
    if "mlflow" in verl.logger:
        out["+ray_kwargs.ray_init.runtime_env.env_vars.MLFLOW_TRACKING_URI"] = inputs.mlflow_uri
        if inputs.mlflow_run_id:
            out["+ray_kwargs.ray_init.runtime_env.env_vars.MLFLOW_RUN_ID"] = inputs.mlflow_run_id
    return out


AUDIT_FILE = "audit.jsonl"  # the CPU path's per-step audit counts, in the run directory
CPU_AGENT_LOOP_MANAGER = "coding_framework.training.verl.cpu_rollout.AuditingAgentLoopManager"


def _cpu(cfg: TrainingConfig, verl: VerlConfig, inputs: VerlInputs) -> Overrides:
    """The device settings of ``device: cpu`` (``training.verl.cpu``): verl's workers on the ``cpu``
    platform with gloo, one pretend Ray GPU per FSDP worker, no ``torch.compile`` (it made the first step
    about 100x slower), sdpa attention (flash-attention is CUDA-only) without remove-padding (its varlen
    kernels are flash-attention's), and the token-server rollout, whose batches are audited through the
    weights that generated them. Everything else is the GPU mapping's."""
    if cfg.device != "cpu":
        return {}
    from coding_framework.training.verl.cpu import ROLLOUT, device_env

    if verl.fsdp.param_offload or verl.fsdp.optimizer_offload:
        raise VerlMappingError("fsdp.param_offload / optimizer_offload offload to the CPU, where a CPU run "
                               "already is (FSDP2's offload policy needs an accelerator): set both false")

    workers = verl.cluster.nnodes * verl.cluster.gpus_per_node
    env = {**device_env(), **({"PYTHONPATH": inputs.pythonpath} if inputs.pythonpath else {})}
    out: Overrides = {
        "trainer.device": "cpu",
        "actor_rollout_ref.rollout.name": ROLLOUT,
        "+actor_rollout_ref.rollout.agent.agent_loop_manager_class": CPU_AGENT_LOOP_MANAGER,
        "actor_rollout_ref.model.use_remove_padding": False,
        "+actor_rollout_ref.model.override_config.attn_implementation": "sdpa",
        "+coding_framework.audit_file": str(inputs.run_dir / AUDIT_FILE),
        "+coding_framework.audit_tolerance": cfg.audit_tolerance,
        "+ray_kwargs.ray_init.num_gpus": workers,
        "+ray_kwargs.ray_init.num_cpus": workers + verl.rollout.agent_workers + 1,  # Ray prestarts as many
        "data.dataloader_num_workers": 0,
        "actor_rollout_ref.ref.fsdp_config.param_offload": False,  # the GPU mapping's offload to the CPU
        "+ray_kwargs.ray_init.include_dashboard": False,
    }
    for role in ("actor_rollout_ref.actor", "actor_rollout_ref.ref"):
        out[f"{role}.use_torch_compile"] = False
        out[f"{role}.fsdp_config.use_torch_compile"] = False
    out["critic.fsdp.use_torch_compile"] = False
    out["+critic.model.override_config.attn_implementation"] = "sdpa"
    out["critic.model.use_remove_padding"] = False
    out.update({f"+ray_kwargs.ray_init.runtime_env.env_vars.{k}": v for k, v in env.items()})
    return out


def _group_filtering(spec: AlgorithmSpec, off: OffPolicy) -> Overrides:
    """DAPO's dynamic sampling as the V1 trainer's group filtering: groups whose rewards are all equal are
    evicted and replaced (``algorithm.filter_groups``, metric ``reward``: the agent loop's reward)."""
    if not (spec.dynamic_sampling and off.v1):
        return {}
    return {"algorithm.filter_groups.enable": True, "algorithm.filter_groups.metric": "reward"}


def verl_overrides(cfg: TrainingConfig, spec: AlgorithmSpec, verl: VerlConfig, inputs: VerlInputs,
                   off: OffPolicy | None = None) -> Overrides:
    """Every verl key this run sets, in a stable order (a later value of the same key wins)."""
    return {
        **_data_and_model(cfg, inputs),
        **_policies(cfg, inputs),
        **_rollout(cfg, verl, inputs),
        **_algorithm(spec),
        **_kl(cfg),
        **_optim(cfg),
        **_fsdp(verl.fsdp, cfg.rollout.problems_per_step, cfg.algo.minibatches),
        **_trainer(cfg, verl, inputs),
        **off_policy_overrides(off or OffPolicy(v1=uses_v1(cfg)), verl, cfg.algo.minibatches),
        **_group_filtering(spec, off or OffPolicy(v1=uses_v1(cfg))),
        **_cpu(cfg, verl, inputs),
    }


# Every TrainingConfig field, by dotted path (a section's path covers each field under it), is either applied
# (MAPPED: where) or listed in NOT_APPLIED; tests/training/verl/test_field_coverage.py enumerates the config
# and fails on a field in neither.
MAPPED: dict[str, str] = {
    "algorithm": "algorithm.adv_estimator, the actor's policy loss, clipping, aggregation (_algorithm)",
    "algo.overrides": "the same keys, from the overridden AlgorithmSpec",
    "seed": "data.seed; the before/after evaluation's seed",
    "steps": "trainer.total_training_steps",
    "device": "cpu: the CPU device settings (_cpu); auto/cuda: verl's GPU defaults",
    "model": "actor_rollout_ref.model.path (and critic.model.path)",
    "embedded": "builds the embedded starting model, whose directory is the model path",
    "workflow": "the agents/graph/sandbox YAMLs CodingAgentLoop loads, and the repository YAML "
                "RepositoryAgentLoop loads (+coding_framework.*)",
    "data": "the parquet train/val files (data.train_files, data.val_files) from prepare_data; "
            "data.repository: rows of repository tasks, for RepositoryAgentLoop",
    "rollout.problems_per_step": "data.train_batch_size",
    "rollout.group_size": "actor_rollout_ref.rollout.n",
    "rollout.max_new_tokens": "the Generator's max_new_tokens in the agents YAML",
    "rollout.temperature": "actor_rollout_ref.rollout.temperature",
    "rollout.top_p": "actor_rollout_ref.rollout.top_p",
    "rollout.trained_roles": "+coding_framework.trained_role (one role; more are refused)",
    "rollout.max_staleness": "trainer.v1.trainer_mode and sampler.max_off_policy_threshold (_staleness)",
    "reward.function": "the rewards YAML CodingAgentLoop scores with",
    "reward.round_penalty": "+coding_framework.round_penalty (the agent loop's reward)",
    "optim.lr": "actor.optim.lr", "optim.critic_lr": "critic.optim.lr",
    "optim.weight_decay": "*.optim.weight_decay", "optim.betas": "*.optim.betas",
    "optim.eps": "actor.optim.override_optimizer_config.eps", "optim.warmup_steps": "*.optim.lr_warmup_steps",
    "optim.schedule": "*.optim.lr_scheduler_type (linear is refused)",
    "optim.min_lr_ratio": "*.optim.min_lr_ratio",
    "optim.grad_clip": "*.optim.clip_grad (null is refused)",
    "algo.epochs": "*.ppo_epochs", "algo.minibatches": "*.ppo_mini_batch_size",
    "algo.entropy_coef": "actor.entropy_coeff",
    "algo.off_policy_correction": "algorithm.rollout_correction", "algo.tis_cap": "rollout_is_threshold",
    "algo.mis_bounds": "rollout_rs_threshold",
    "kl.mode": "actor.use_kl_loss / algorithm.use_kl_in_reward", "kl.estimator": "kl_loss_type, kl_penalty",
    "kl.coef": "kl_loss_coef, kl_ctrl.kl_coef", "kl.controller": "algorithm.kl_ctrl.type",
    "kl.target_kl": "algorithm.kl_ctrl.target_kl", "kl.horizon": "algorithm.kl_ctrl.horizon",
    "checkpoint.every": "trainer.save_freq", "checkpoint.keep_last": "trainer.max_*_ckpt_to_keep",
    "tracking.mlflow_uri": "the run's MLflow store (verl logs into the run's MLflow run)",
    "tracking.experiment": "trainer.project_name; the MLflow experiment",
    "tracking.registered_model": "the registered name of the final model (run_verl)",
    "tracking.wandb_project": "run_verl's trackers",
    "eval.every": "trainer.test_freq", "eval.baseline": "trainer.val_before_train",
    "eval.max_rounds": "the before/after held-out evaluation (run_verl)",
    "eval.temperature": "the before/after held-out evaluation", "eval.samples": "the same",
    "eval.max_new_tokens": "the same",
    "eval.benchmarks": "the before/after slices (run_verl), gated ones too",
    "gate": "the regression gate on the before/after evaluation (run_verl, gate.gate_verdict)",
    "audit.tolerance": "+coding_framework.audit_tolerance (the CPU rollout's audit)",
    "policies": "actor_rollout_ref.model.lora_* (_policies; per_role_lora is refused)",
    "reviewer_warm_start": "enabled is refused (_policies); its other fields only apply when enabled",
    "warm_start": "enabled is refused (_policies); its other fields only apply when enabled",
    "repository_warm_start": "enabled is refused (_policies); its other fields only apply when enabled",
}


@dataclass(frozen=True)
class NotApplied:
    """A field verl's trainer does not apply: ``why``, and whether a value away from its default changes what
    is learned (then it is refused; else the run warns about it)."""

    why: str
    changes_learning: bool


NOT_APPLIED: dict[str, NotApplied] = {
    "threads": NotApplied("Ray sets each worker's threads", False),
    "rollout.temperature_end": NotApplied("verl samples at one temperature throughout", True),
    "rollout.max_batch_size": NotApplied("the rollout engine batches itself", False),
    "rollout.engine": NotApplied("verl's rollout is VerlConfig.rollout.name (token_server on CPU)", False),
    "rollout.engine_url": NotApplied("verl starts its own rollout replicas", False),
    "eval.engine": NotApplied("the before/after evaluations run on the exported model (run_verl)", False),
    "rollout.vllm": NotApplied("verl starts its own rollout replicas (VerlConfig.rollout)", False),
    "rollout.mask_overlong": NotApplied("the agent loop returns every response unmasked", True),
    "rollout.overlong_buffer": NotApplied("no soft overlong penalty in the agent loop's reward", True),
    "rollout.overlong_penalty": NotApplied("no soft overlong penalty in the agent loop's reward", True),
    "rollout.refill_zero_variance": NotApplied("verl trains on the batch as generated", True),
    "rollout.max_refill_rounds": NotApplied("verl trains on the batch as generated", False),
    "reward.normalize": NotApplied("verl's estimator normalizes; no batch/running reward norm", True),
    "reward.clip": NotApplied("the agent loop's reward is not clipped", True),
    "reward.review": NotApplied("verl trains one role; the Reviewer's credit is not assigned", True),
    "optim.micro_batch_size": NotApplied("VerlConfig.fsdp.micro_batch_size_per_gpu (same gradient)", False),
    "optim.precision": NotApplied("VerlConfig.fsdp.mixed_precision decides", True),
    "optim.gradient_checkpointing": NotApplied("VerlConfig.fsdp.gradient_checkpointing decides", False),
    "algo.value_coef": NotApplied("verl's critic has its own optimizer and loss", True),
    "kl.stop_kl": NotApplied("a guard: verl trains every step (the KL is logged as actor/kl_loss)", False),
    "kl.stop_patience": NotApplied("a guard: verl trains every step", False),
    "curriculum": NotApplied("verl samples the training set uniformly (data.shuffle)", True),
    "tracking.log_checkpoints": NotApplied("verl's checkpoints stay in <run-dir>/checkpoints", False),
    "tracking.trace_every": NotApplied("verl's episodes are not recorded as MLflow traces", False),
    "tracking.trace_episodes": NotApplied("verl's episodes are not recorded as MLflow traces", False),
    "audit.every": NotApplied("the CPU rollout audits every training batch", False),
    "audit.rows": NotApplied("the CPU rollout audits every row", False),
}


def _section(path: str, table: Mapping[str, Any]) -> str | None:
    """The entry of ``table`` that covers ``path`` (itself or a section above it)."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        if ".".join(parts[:i]) in table:
            return ".".join(parts[:i])
    return None


def _value_at(cfg: Any, path: str) -> Any:
    for part in path.split("."):
        cfg = getattr(cfg, part)
    return cfg


def not_applied(cfg: TrainingConfig, spec: AlgorithmSpec) -> list[str]:
    """The NOT_APPLIED fields this run sets away from their defaults (warnings), plus DAPO's group
    filtering, which only verl's V1 trainer has. A set field that changes what is learned is refused."""
    default = TrainingConfig()
    changed = [p for p in NOT_APPLIED if _value_at(cfg, p) != _value_at(default, p)]
    refused = [p for p in changed if NOT_APPLIED[p].changes_learning]
    if refused:
        raise VerlMappingError("; ".join(f"{p}: {NOT_APPLIED[p].why}" for p in refused) +
                               " (verl's trainer would ignore it and learn something else): set it back to "
                               "its default, or train with `coding-framework train`")
    out = [p for p in changed if p not in refused]
    if spec.dynamic_sampling and not uses_v1(cfg):
        out.append("dynamic_sampling (DAPO group filtering: verl v1 trainer only)")
    return out


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "[" + ",".join(_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}:{_value(v)}" for k, v in value.items()) + "}"
    text = str(value)
    if isinstance(value, int | float) or (_PLAIN.match(text) and not _typed(text)):
        return text
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _typed(text: str) -> bool:
    """Whether hydra would read the plain string ``text`` as a number, bool or null (so it needs quotes)."""
    if text.lower() in ("true", "false", "null", "none", "nan", "inf", "-inf"):
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True


def hydra_args(overrides: Mapping[str, Any]) -> list[str]:
    """``key=value`` strings in hydra's override grammar (strings quoted where the grammar needs it)."""
    return [f"{key}={_value(value)}" for key, value in overrides.items()]
