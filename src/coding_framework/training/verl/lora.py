"""verl's LoRA tensors as full Hugging Face weights: ``W = W0 + scaling * B @ A`` for each adapted Linear.

verl's FSDP engine, training a peft adapter without ``model.lora.merge``, syncs the rollout in two forms
(``engine_workers.update_weights``, ``fsdp_utils.collect_lora_params``):

* the base (once, while ``base_sync_done`` is false): every weight under its Hugging Face name, the adapted
  Linears' as ``<module>.base_layer.weight``;
* the adapter (after every update): peft's state dict, ``base_model.model.<module>.lora_A.weight`` and
  ``...lora_B.weight``, with the adapter's ``peft_config`` as a dict.

The token server (``TokenServer.load_lora``) keeps the base and samples from the merged weights, so the
rollout generates from the policy the trainer just updated. Plain LoRA only: DoRA, per-module rank or alpha
patterns and ``fan_in_fan_out`` layers are refused.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import torch

__all__ = ["base_names", "lora_scaling", "merge_lora"]

_PEFT_PREFIX = "base_model.model."


def lora_scaling(peft_config: Mapping[str, Any]) -> float:
    """peft's ``alpha / r`` (``alpha / sqrt(r)`` with rsLoRA); a setting the merge cannot honour is an
    error."""
    for key in ("use_dora", "fan_in_fan_out"):
        if peft_config.get(key):
            raise ValueError(f"peft_config.{key} is set: the token server merges plain LoRA only")
    for key in ("rank_pattern", "alpha_pattern"):
        if peft_config.get(key):
            raise ValueError(f"peft_config.{key} is set: the token server merges one rank and alpha only")
    rank, alpha = int(peft_config["r"]), float(peft_config["lora_alpha"])
    return alpha / math.sqrt(rank) if peft_config.get("use_rslora") else alpha / rank


def base_names(state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """verl's base sync under plain Hugging Face names (``<module>.base_layer.weight`` ->
    ``<module>.weight``)."""
    return {name.replace(".base_layer.", "."): tensor for name, tensor in state.items()}


def _module(name: str, part: str) -> str:
    """``base_model.model.<module>.lora_A[.default].weight`` -> ``<module>``."""
    module = name.removeprefix(_PEFT_PREFIX)
    for suffix in (f".{part}.default.weight", f".{part}.weight"):
        if module.endswith(suffix):
            return module[: -len(suffix)]
    raise ValueError(f"{name!r} is not a LoRA {part} weight")


def merge_lora(base: Mapping[str, torch.Tensor], adapter: Mapping[str, torch.Tensor],
               peft_config: Mapping[str, Any]) -> dict[str, torch.Tensor]:
    """``base`` (Hugging Face names) with each adapted Linear's weight replaced by ``W0 + scaling * B @ A``
    (in ``W0``'s dtype); the other weights are ``base``'s own tensors. Every ``lora_A`` needs its ``lora_B``
    and a base weight of the product's shape."""
    scaling = lora_scaling(peft_config)
    a = {_module(k, "lora_A"): v for k, v in adapter.items() if ".lora_A." in k}
    b = {_module(k, "lora_B"): v for k, v in adapter.items() if ".lora_B." in k}
    unknown = [k for k in adapter if ".lora_A." not in k and ".lora_B." not in k]
    if unknown or set(a) != set(b) or not a:
        raise ValueError("an adapter update needs matching lora_A/lora_B pairs; got "
                         f"{sorted(adapter)[:4]}...")
    merged = dict(base)
    for module in sorted(a):
        key = f"{module}.weight"
        if key not in base:
            raise ValueError(f"the adapter adapts {module!r}, which the base has no weight for")
        w0 = base[key]
        delta = b[module].to(torch.float32) @ a[module].to(torch.float32)
        if delta.shape != w0.shape:
            raise ValueError(f"{module}: B @ A is {tuple(delta.shape)}, the weight {tuple(w0.shape)}")
        merged[key] = (w0.to(torch.float32) + scaling * delta).to(w0.dtype)
    return merged
