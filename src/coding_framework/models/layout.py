"""A model directory on disk: a Hugging Face model, optionally with per-role LoRA adapters beside it.

``<dir>/config.json`` and the weights are the base (or the whole model); ``<dir>/adapters/<name>/`` holds
one peft adapter each (``adapter_model.safetensors`` and ``adapter_config.json``), as training writes them.
An adapter named after a role is that role's (`per_role_lora`); a lone ``policy`` adapter serves every
agent role (`shared_lora`); roles without an adapter call the base. ``policies_for`` rebuilds the
``PoliciesConfig`` that maps roles to those adapters, which every loader applies.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from coding_framework.config.policies import AGENT_ROLES, SHARED_ADAPTER, PoliciesConfig

__all__ = [
    "ADAPTERS_DIR", "ADAPTER_CONFIG", "ADAPTER_FILE", "RoleAdapter", "find_adapters", "is_model_dir",
    "policies_for", "role_adapter_map", "roles_for",
]

ADAPTERS_DIR = "adapters"
ADAPTER_FILE = "adapter_model.safetensors"
ADAPTER_CONFIG = "adapter_config.json"
# peft options RoleAdapters does not build: an adapter that uses one would be run wrongly.
_UNSUPPORTED = ("use_dora", "use_rslora", "rank_pattern", "alpha_pattern", "layers_to_transform")


@dataclass(frozen=True)
class RoleAdapter:
    """One LoRA adapter of a model directory: ``path`` is its peft directory, ``sha256`` that of its
    tensors file (what the registry's ``adapter_sha256.<name>`` tag holds)."""

    name: str
    path: Path
    sha256: str


def is_model_dir(path: Path) -> bool:
    return path.is_dir() and (path / "config.json").is_file()


def find_adapters(model_dir: Path, checksums: dict[str, str]) -> tuple[RoleAdapter, ...]:
    """The adapters ``model_dir/adapters/`` holds (``checksums``: name -> tensors' sha256, as
    ``adapter_checksums`` gives them); a ValueError names one that lacks its config."""
    out = []
    for name, digest in sorted(checksums.items()):
        path = model_dir / ADAPTERS_DIR / name
        if not (path / ADAPTER_CONFIG).is_file():
            raise ValueError(f"{path} has adapter weights but no {ADAPTER_CONFIG}; it cannot be loaded")
        out.append(RoleAdapter(name, path, digest))
    return tuple(out)


def policies_for(adapters: tuple[RoleAdapter, ...]) -> PoliciesConfig | None:
    """The ``PoliciesConfig`` that rebuilds ``adapters`` (rank, alpha and targets from their peft configs,
    which must agree); None without adapters."""
    if not adapters:
        return None
    shapes = set()
    for adapter in adapters:
        peft = json.loads((adapter.path / ADAPTER_CONFIG).read_text())
        extras = [k for k in _UNSUPPORTED if peft.get(k)]
        if peft.get("peft_type", "LORA") != "LORA" or extras:
            found = extras or peft.get("peft_type")
            raise ValueError(f"{adapter.path}: only plain LoRA adapters can be loaded (found {found})")
        shapes.add((peft["r"], peft["lora_alpha"], tuple(sorted(peft["target_modules"]))))
    if len(shapes) != 1:
        raise ValueError(f"the adapters in {adapters[0].path.parent} differ in rank, alpha or target "
                         f"modules: {shapes}")
    rank, alpha, targets = shapes.pop()
    names = [a.name for a in adapters]
    if names == [SHARED_ADAPTER]:
        return PoliciesConfig(mode="shared_lora", roles=list(AGENT_ROLES), rank=rank, alpha=alpha,
                              target_modules=list(targets))
    return PoliciesConfig(mode="per_role_lora", roles=names, rank=rank, alpha=alpha,
                          target_modules=list(targets))


def roles_for(adapters: tuple[RoleAdapter, ...]) -> list[str]:
    """The roles a model with ``adapters`` can be called as: the agents' roles, plus any other role it has
    an adapter for."""
    own = [a.name for a in adapters if a.name != SHARED_ADAPTER]
    return [*AGENT_ROLES, *(r for r in own if r not in AGENT_ROLES)]


def role_adapter_map(adapters: tuple[RoleAdapter, ...]) -> dict[str, str]:
    """Role -> the adapter its calls run through, for the roles that have one (empty without adapters)."""
    policies = policies_for(adapters)
    if policies is None:
        return {}
    found = {role: policies.adapter_for(role) for role in roles_for(adapters)}
    return {role: name for role, name in found.items() if name is not None}
