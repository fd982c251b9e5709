"""How a verl run uses its GPUs: the FSDP section, micro-batches, the rollout engine and the cluster shape.

The training itself (algorithm, batch sizes in problems and samples, learning rate, KL, checkpoints) comes
from the ``TrainingConfig``; this config holds only what verl needs on top of it to place and shard the
work. ``training.verl.overrides`` turns both into verl's hydra overrides; each field names the verl key it
sets. YAML: shipped ``verl_fsdp`` (a one-node default) and ``verl_smoke`` (the GPU smoke test's tiny run).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from coding_framework.config.loader import StrictModel

__all__ = ["CPU_REPOSITORY_LENGTHS", "FSDPSection", "FSDPStrategy", "MixedPrecisionSection", "PrecisionName",
           "RolloutEngine", "VerlClusterSection", "VerlConfig", "VerlRolloutSection"]

CPU_REPOSITORY_LENGTHS = {"rollout.prompt_length": 1024, "rollout.response_length": 1024}
"""``verl-train``'s lengths for repository tasks on the CPU (``verl_fsdp_cpu``'s are sized for problems): the
opening prompt lists the repository, and a few tool turns with their observations fill the response; both
together are the embedded model's 2048 positions."""

FSDPStrategy = Literal["fsdp", "fsdp2"]
PrecisionName = Literal["bf16", "fp16", "fp32"]
RolloutEngine = Literal["vllm", "sglang"]


class MixedPrecisionSection(StrictModel):
    """FSDP mixed precision (``fsdp_config.mixed_precision``): the dtype parameters are gathered in for
    compute, the dtype gradients are reduced in, and the dtype of buffers."""

    param_dtype: PrecisionName = Field("bf16", description="Compute dtype of the gathered parameters.")
    reduce_dtype: PrecisionName = Field("fp32", description="Gradient all-reduce / reduce-scatter dtype.")
    buffer_dtype: PrecisionName = Field("fp32", description="Dtype of module buffers (FSDP1 only).")


class FSDPSection(StrictModel):
    """The actor's (and critic's) FSDP engine: ``actor_rollout_ref.actor.fsdp_config.*``."""

    strategy: FSDPStrategy = Field(
        "fsdp2", description="`fsdp2` (per-parameter sharding, `fully_shard`) or `fsdp` (FSDP1 flat params).")
    full_shard: bool = Field(
        True, description="Reshard parameters after forward (ZeRO-3, FULL_SHARD); false keeps them "
        "gathered until backward (ZeRO-2, SHARD_GRAD_OP): more memory, less communication.")
    fsdp_size: int = Field(
        -1, description="GPUs per FSDP group; -1 shards over all of them, a divisor of the GPU count gives "
        "hybrid sharding (shard within groups, replicate across).")
    param_offload: bool = Field(False, description="Keep parameters on CPU between uses.")
    optimizer_offload: bool = Field(False, description="Keep the optimizer state on CPU between steps.")
    model_dtype: PrecisionName = Field("fp32", description="The dtype the master weights are loaded in.")
    mixed_precision: MixedPrecisionSection = Field(default_factory=MixedPrecisionSection)
    micro_batch_size_per_gpu: int = Field(
        4, ge=1, description="Sequences per forward/backward on one GPU (`ppo_micro_batch_size_per_gpu`); "
        "gradients accumulate over `mini-batch / (micro_batch_size_per_gpu * GPUs)` micro-batches.")
    log_prob_micro_batch_size_per_gpu: int = Field(
        8, ge=1, description="Sequences per GPU when recomputing old / reference log-probs.")
    gradient_checkpointing: bool = Field(
        True, description="Recompute activations in backward (`model.enable_gradient_checkpointing`).")

    @model_validator(mode="after")
    def _fsdp_size(self) -> FSDPSection:
        if self.fsdp_size == 0 or self.fsdp_size < -1:
            raise ValueError(f"fsdp.fsdp_size must be -1 (all GPUs) or a positive divisor of the GPU "
                             f"count, got {self.fsdp_size}")
        return self


class VerlRolloutSection(StrictModel):
    """The async rollout replicas (``actor_rollout_ref.rollout.*``) and the episode length budget."""

    name: RolloutEngine = Field(
        "vllm", description="verl's rollout engine (`rollout.name`): `vllm` or `sglang` (GPU only).")
    tensor_parallel_size: int = Field(1, ge=1, description="GPUs per rollout replica.")
    gpu_memory_utilization: float = Field(
        0.5, gt=0, lt=1,
        description="Share of each GPU's memory the rollout engine may take (the rest is FSDP's).")
    prompt_length: int = Field(1024, ge=16, description="Most tokens of the first prompt (the task).")
    response_length: int = Field(
        2048, ge=16, description="Most tokens of the whole multi-turn response (all rounds, tool output "
        "included); an episode that would exceed it ends at its last complete round.")
    max_num_seqs: int = Field(256, ge=1, description="Most sequences one rollout replica decodes at once.")
    agent_workers: int = Field(8, ge=1, description="verl `AgentLoopWorker` actors running episodes.")


class VerlClusterSection(StrictModel):
    """Where the job runs (``trainer.nnodes``, ``trainer.n_gpus_per_node``, ``ray_kwargs.ray_init``)."""

    nnodes: int = Field(1, ge=1, description="Nodes the trainer places workers on.")
    gpus_per_node: int = Field(8, ge=1, description="GPUs per node the trainer uses.")
    ray_address: str | None = Field(
        None, description="An existing Ray cluster (`auto`, `ray://host:10001` or `host:6379`); null starts "
        "a local one.")


class VerlConfig(StrictModel):
    """What verl needs beyond the ``TrainingConfig``: FSDP, rollout replicas, cluster shape."""

    fsdp: FSDPSection = Field(default_factory=FSDPSection)
    rollout: VerlRolloutSection = Field(default_factory=VerlRolloutSection)
    cluster: VerlClusterSection = Field(default_factory=VerlClusterSection)
    logger: list[str] = Field(
        default_factory=lambda: ["console", "mlflow"],
        description="verl's `trainer.logger` backends; `mlflow` logs to the run's MLflow store.")
