"""The Generator's supervised warm start before RL (``training.generator_sft``)."""

from __future__ import annotations

from pydantic import Field

from coding_framework.config.loader import StrictModel

__all__ = ["GeneratorWarmStartConfig"]


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
