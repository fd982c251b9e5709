"""Which role a request calls as, and which adapter of its version that role runs through.

A version with per-role LoRA adapters is served as one set of role policies: each call names its role
(the chat body's ``role`` field, or the agent making a /v1/solve call), and runs through that role's
adapter. A call without a role is a Generator call. Roles are the agents' (``generator``, ``reviewer``) plus
any other role a version has an adapter for; another role is a 400. A version without adapters serves every
role with its one policy. The role -> adapter map follows ``PoliciesConfig`` (what the trainer used): an
adapter named after a role is that role's; a lone ``policy`` adapter (`shared_lora`) serves every agent role;
roles without an adapter call the base.
"""

from __future__ import annotations

import json

from coding_framework.agents.generator import CodeGenerator
from coding_framework.agents.reviewer import REVIEWER_ROLE
from coding_framework.config.policies import ADAPTER_CONFIG, SHARED_ADAPTER, PoliciesConfig
from coding_framework.serving.errors import bad_request
from coding_framework.serving.versions import Version

DEFAULT_ROLE = CodeGenerator.role
AGENT_ROLES = (CodeGenerator.role, REVIEWER_ROLE)
# peft options RoleAdapters does not build: an adapter that uses one would be served wrongly.
_UNSUPPORTED = ("use_dora", "use_rslora", "rank_pattern", "alpha_pattern", "layers_to_transform")


def policies_of(version: Version) -> PoliciesConfig | None:
    """The ``PoliciesConfig`` that rebuilds ``version``'s adapters (rank, alpha and targets from their peft
    configs, which must agree); None without adapters."""
    if not version.adapters:
        return None
    shapes = set()
    for adapter in version.adapters:
        peft = json.loads((adapter.path / ADAPTER_CONFIG).read_text())
        extras = [k for k in _UNSUPPORTED if peft.get(k)]
        if peft.get("peft_type", "LORA") != "LORA" or extras:
            found = extras or peft.get("peft_type")
            raise ValueError(f"{adapter.path}: only plain LoRA adapters are served (found {found})")
        shapes.add((peft["r"], peft["lora_alpha"], tuple(sorted(peft["target_modules"]))))
    if len(shapes) != 1:
        raise ValueError(f"the adapters of {version.id} differ in rank, alpha or target modules: {shapes}")
    rank, alpha, targets = shapes.pop()
    names = [a.name for a in version.adapters]
    if names == [SHARED_ADAPTER]:
        return PoliciesConfig(mode="shared_lora", roles=list(AGENT_ROLES), rank=rank, alpha=alpha,
                              target_modules=list(targets))
    return PoliciesConfig(mode="per_role_lora", roles=names, rank=rank, alpha=alpha,
                          target_modules=list(targets))


def roles_of(version: Version) -> list[str]:
    """The roles a request to ``version`` may name."""
    own = [a.name for a in version.adapters if a.name != SHARED_ADAPTER]
    return [*AGENT_ROLES, *(r for r in own if r not in AGENT_ROLES)]


def role_adapters_map(version: Version) -> dict[str, str]:
    """Role -> the adapter it calls, for the roles that have one (empty without adapters)."""
    policies = policies_of(version)
    if policies is None:
        return {}
    found = {role: policies.adapter_for(role) for role in roles_of(version)}
    return {role: name for role, name in found.items() if name is not None}


def check_role(version: Version, role: str | None) -> str:
    """The role a request calls as (``DEFAULT_ROLE`` when it names none); a 400 for a role it cannot."""
    if role is None:
        return DEFAULT_ROLE
    allowed = roles_of(version)
    if role not in allowed:
        raise bad_request(
            f"unknown role {role!r} for {version.id}; use one of {allowed}", "role", "unknown_role"
        )
    return role
