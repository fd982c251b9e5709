"""The embedded default model: tokenizer, architecture and SFT settings of the no-download bootstrap."""

from __future__ import annotations

from pydantic import Field, model_validator

from coding_framework.config.loader import StrictModel


class TokenizerConfig(StrictModel):
    """Byte-level BPE trained on the local Python standard library source plus the problems' text."""

    vocab_size: int = Field(4096, ge=512, le=65_536, description="Vocabulary size, special tokens included.")
    min_frequency: int = Field(2, ge=1, description="A pair must occur this often to be merged.")
    corpus_mb: float = Field(
        6.0,
        gt=0,
        le=200,
        description="Megabytes of stdlib source fed to BPE training (sorted files, first ones).",
    )
    problem_text_repeats: int = Field(
        4,
        ge=0,
        le=100,
        description="How many times the problems' prompts and solutions are added to the corpus.",
    )


class ArchitectureConfig(StrictModel):
    """A Qwen2 causal LM (a vLLM-supported architecture). ``head_dim = hidden_size / num_heads``."""

    hidden_size: int = Field(256, ge=32)
    num_layers: int = Field(4, ge=1, le=64)
    num_heads: int = Field(4, ge=1, description="More heads copy better; head_dim must stay >= 32 for vLLM.")
    num_kv_heads: int = Field(4, ge=1, description="Grouped-query attention: must divide num_heads.")
    intermediate_size: int = Field(768, ge=32, description="Width of the SwiGLU MLP.")
    max_positions: int = Field(2048, ge=128, description="Longest sequence (prompt + all turns) in tokens.")
    rope_theta: float = Field(10_000.0, gt=0)
    tie_embeddings: bool = Field(True, description="Share the input embedding and the output projection.")

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @model_validator(mode="after")
    def _shapes(self) -> ArchitectureConfig:
        if self.hidden_size % self.num_heads:
            raise ValueError(
                f"hidden_size {self.hidden_size} must be a multiple of num_heads {self.num_heads}"
            )
        if self.head_dim < 32:
            raise ValueError(
                f"head_dim = hidden_size / num_heads = {self.head_dim}; vLLM needs >= 32: use fewer heads"
            )
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_kv_heads {self.num_kv_heads} must divide num_heads {self.num_heads}")
        return self


class SFTDataConfig(StrictModel):
    """Training data: the built-in problems plus the synthetic families' training split."""

    synthetic_per_family: int = Field(
        80, ge=0, description="`n_per_family` of `synthetic_split` (0: none); about 3/4 of them are training."
    )
    synthetic_heldout_fraction: float = Field(
        0.25,
        gt=0,
        lt=1,
        description="`synthetic_split`'s heldout_fraction; `TrainingConfig` requires `data.heldout_fraction` "
        "to equal it, so held-out constants stay unseen by SFT.",
    )
    synthetic_seed: int = Field(
        0,
        description="`synthetic_split`'s seed; `TrainingConfig` requires `data.split_seed` to equal it.",
    )
    habit_share: float = Field(
        0.65,
        ge=0,
        le=0.9,
        description="Share of first-draft examples whose answer prints its result instead of returning it: "
        "a failing habit of script code, which RL on the grader's reward can unlearn.",
    )
    revision_share: float = Field(
        0.25,
        ge=0,
        le=0.9,
        description="Share of SFT examples that are revisions: wrong attempt + feedback -> fix.",
    )

    @model_validator(mode="after")
    def _split_size(self) -> SFTDataConfig:
        if self.synthetic_per_family == 1:
            raise ValueError("synthetic_per_family must be 0 (no synthetic data) or at least 2")
        return self


class PhaseConfig(StrictModel):
    """One optimisation phase: AdamW with linear warmup to ``lr`` then cosine decay to ``lr / 10``."""

    steps: int = Field(ge=1, description="Optimizer steps.")
    batch_size: int = Field(8, ge=1, description="Rows per step.")
    lr: float = Field(2e-3, gt=0, description="Peak learning rate.")
    warmup_steps: int = Field(20, ge=0)
    weight_decay: float = Field(0.01, ge=0, description="On matrices only, not on norms and biases.")
    grad_clip: float = Field(1.0, gt=0, description="Global gradient-norm clip.")


class PretrainConfig(PhaseConfig):
    """Next-token loss on every token of the training problems' reference programs (plain code).

    It helps a very small model (hidden 128) copy names and constants from the prompt; the default
    4.5M-parameter model learns that from SFT alone, so the default skips it.
    """

    steps: int = Field(0, ge=0, description="Optimizer steps (0 skips the phase).")
    seq_len: int = Field(256, ge=16, description="Programs are concatenated and cut into rows this long.")


class SFTConfig(PhaseConfig):
    """Supervised fine-tuning in the Generator's chat format, loss on the answer tokens only."""

    steps: int = Field(580, ge=1, description="Optimizer steps.")
    batch_size: int = Field(16, ge=1, description="Examples per step.")
    warmup_steps: int = Field(30, ge=0)
    max_seq_len: int = Field(512, ge=64, description="Longer examples are dropped, not truncated.")


class EmbeddedModelConfig(StrictModel):
    """Everything that determines the embedded model's weights. Its hash keys the on-disk cache."""

    reference: bool = Field(
        True,
        description="Use the reference build shipped with the package when this is the recipe it was built "
        "from, so every machine starts from the same weights; false builds the recipe on this machine "
        "(its weights then depend on the CPU's float rounding). Not part of the recipe's hash.",
    )
    seed: int = Field(0, description="Seeds the data order, the initialisation and the revision examples.")
    threads: int | None = Field(
        2,
        ge=1,
        description="torch CPU threads while building. A fixed count makes the weights independent of the "
        "core count; None keeps torch's default (weights then vary with the machine).",
    )
    tokenizer: TokenizerConfig = Field(default_factory=TokenizerConfig)
    architecture: ArchitectureConfig = Field(default_factory=ArchitectureConfig)
    data: SFTDataConfig = Field(default_factory=SFTDataConfig)
    pretrain: PretrainConfig = Field(default_factory=PretrainConfig)
    sft: SFTConfig = Field(default_factory=SFTConfig)
