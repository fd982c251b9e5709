"""The supervised warm starts before RL: the Generator's (``training.generator_sft``) and the tool-calling
agent's on repository tasks (``training.repository_sft``)."""

from __future__ import annotations

from pydantic import Field

from coding_framework.config.loader import StrictModel

__all__ = ["GeneratorWarmStartConfig", "RepositoryWarmStartConfig"]


class GeneratorWarmStartConfig(StrictModel):
    """Supervised fine-tuning of the Generator on programs known to pass, before the first RL step of a fresh
    run: each training problem's reference solutions and the policy's own passing samples where the problems
    carry them (`data rank --keep-passing`), each as the answer to the Generator's own request. Its gate is
    the held-out problems' loss: a warm start that does not lower it stops the run before RL. Off by default.
    """

    enabled: bool = Field(False, description="Run the warm start before RL (never on resume).")
    epochs: int = Field(2, ge=1, description="Passes over the examples.")
    lr: float = Field(1e-4, gt=0, description="AdamW learning rate; keep it low (the model's own style).")
    micro_batch_size: int = Field(8, ge=1, description="Examples per forward/backward pass.")
    solutions_per_problem: int = Field(
        4, ge=1, description="Most passing programs one problem contributes (reference ones first)."
    )
    max_answer_tokens: int = Field(
        320, ge=1, description="An answer longer than this is left out (a cut program would teach a cut)."
    )
    heldout_limit: int | None = Field(
        200, ge=1, description="The held-out loss is measured on the first N held-out problems' solutions."
    )
    max_heldout_loss_ratio: float = Field(
        1.0, gt=0, description="The gate: held-out loss after / before must be below this, else the run "
        "stops before RL with the warm-started model kept for inspection.",
    )


class RepositoryWarmStartConfig(StrictModel):
    """Supervised fine-tuning of the tool-calling agent on gold demonstrations of the training repository
    tasks, before the first RL step of a fresh run on repository tasks (`data.repository`): each task's gold
    fix played through the real tools (list the files, read the changed module, apply the gold hunk,
    finish), rendered as an episode renders it, with loss on the agent's answers only. Its gate is the loss
    on the first held-out tasks' demonstrations: a warm start that does not lower it stops the run before
    RL. Off by default."""

    enabled: bool = Field(False, description="Run the warm start before RL (never on resume).")
    epochs: int = Field(1, ge=1, description="Passes over the demonstrations.")
    lr: float = Field(1e-4, gt=0, description="AdamW learning rate.")
    micro_batch_size: int = Field(4, ge=1, description="Demonstrations per forward/backward pass.")
    max_examples: int | None = Field(
        None, ge=1, description="Train on the first N training tasks' demonstrations only (None: all)."
    )
    heldout_limit: int = Field(
        8, ge=1, description="The held-out loss is measured on the first N held-out tasks' demonstrations."
    )
    max_heldout_loss_ratio: float = Field(
        1.0, gt=0, description="The gate: held-out loss after / before must be below this, else the run "
        "stops before RL with the warm-started model kept for inspection.",
    )
