"""Which role a request calls as. A version with per-role LoRA adapters is served as one set of role
policies: each call names its role (the chat body's ``role`` field, or the agent making a /v1/solve call)
and runs through that role's adapter (``models.role_adapter_map``). A call without a role is a Generator
call. Roles are the agents' plus any other role a version has an adapter for; another role is a 400.
"""

from __future__ import annotations

from coding_framework.config.policies import GENERATOR_ROLE
from coding_framework.models import ResolvedModel, roles_for
from coding_framework.serving.errors import bad_request

__all__ = ["DEFAULT_ROLE", "check_role"]

DEFAULT_ROLE = GENERATOR_ROLE


def check_role(version: ResolvedModel, role: str | None) -> str:
    """The role a request calls as (``DEFAULT_ROLE`` when it names none); a 400 for a role it cannot."""
    if role is None:
        return DEFAULT_ROLE
    allowed = roles_for(version.adapters)
    if role not in allowed:
        raise bad_request(
            f"unknown role {role!r} for {version.id}; use one of {allowed}", "role", "unknown_role"
        )
    return role
