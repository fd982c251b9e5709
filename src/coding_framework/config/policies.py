"""Which weights each role's calls run through and train: one shared policy (full fine-tune), one LoRA
adapter shared by the roles, or one LoRA adapter per role, all on one frozen base model."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from coding_framework.config.loader import StrictModel

__all__ = [
    "AGENT_ROLES", "GENERATOR_ROLE", "LORA_TARGETS", "REVIEWER_ROLE", "SHARED_ADAPTER", "PoliciesConfig",
    "PolicyMode",
]

PolicyMode = Literal["full", "shared_lora", "per_role_lora"]

# The Linear layers of a Qwen2 decoder block (the embedded model's architecture): attention and MLP.
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
# The one adapter's name in `shared_lora` mode.
SHARED_ADAPTER = "policy"
# The roles of the agents that call an LLM: each call is recorded, trained and served under its role.
GENERATOR_ROLE = "generator"
REVIEWER_ROLE = "reviewer"
AGENT_ROLES = (GENERATOR_ROLE, REVIEWER_ROLE)


class PoliciesConfig(StrictModel):
    """How roles map to weights. `full` (the default) is one policy for every role, fully fine-tuned, as
    before adapters existed. `shared_lora` trains one LoRA adapter (named `policy`) that every role in
    `roles` calls through; `per_role_lora` gives each role in `roles` its own adapter, named after the role,
    which only that role's trajectories update (its own optimizer state). The base stays frozen under
    LoRA; roles not in `roles` call the base. Which roles produce trajectories at all is
    `rollout.trained_roles`."""

    mode: PolicyMode = Field("full", description="`full`, `shared_lora` or `per_role_lora` (see above).")
    roles: list[str] = Field(
        default_factory=lambda: list(AGENT_ROLES),
        min_length=1,
        description="Roles that get an adapter (`per_role_lora`) or share one (`shared_lora`).",
    )
    rank: int = Field(8, ge=1, description="LoRA rank r.")
    alpha: int = Field(16, gt=0, description="LoRA alpha; the update is scaled by alpha / rank.")
    target_modules: list[str] = Field(
        default_factory=lambda: list(LORA_TARGETS),
        min_length=1,
        description="Names of the Linear modules that get LoRA (peft `target_modules`).",
    )

    @field_validator("roles")
    @classmethod
    def _distinct(cls, roles: list[str]) -> list[str]:
        if len(set(roles)) != len(roles) or any(not r or r == "__base__" for r in roles):
            raise ValueError(f"roles must be distinct non-empty names other than '__base__', got {roles}")
        return roles

    @property
    def uses_adapters(self) -> bool:
        return self.mode != "full"

    def adapter_for(self, role: str | None) -> str | None:
        """The adapter ``role``'s calls run through; None: the base (or, in `full` mode, the one policy)."""
        if self.mode == "full" or role not in self.roles:
            return None
        return SHARED_ADAPTER if self.mode == "shared_lora" else role

    def adapter_names(self) -> list[str]:
        """The adapters this config creates, in a fixed order."""
        if self.mode == "full":
            return []
        return [SHARED_ADAPTER] if self.mode == "shared_lora" else list(self.roles)
