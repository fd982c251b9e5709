"""Per-role LoRA adapters on one shared base model (peft), selected per call by the call's role.

``RoleAdapters`` injects one LoRA adapter per name into the base model's Linear layers, in place: the
model object stays the same ``PreTrainedModel`` (the engine decodes with it, the trainer scores and saves
it), and each LoRA layer adds ``B(A(x)) * alpha / r`` of its active adapter to the frozen base output. A
batch whose rows belong to different adapters runs as one forward pass through peft's mixed-adapter
batches (``adapter_names=``, one name per row, ``__base__`` for the base): every layer applies each
adapter to its own rows. B starts at zero, so a fresh adapter's outputs are bit-identical to the base.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from peft import LoraConfig, PeftModel, get_peft_model, get_peft_model_state_dict, set_peft_model_state_dict
from safetensors.torch import load_file, save_file
from transformers import PreTrainedModel

from coding_framework.config.policies import PoliciesConfig
from coding_framework.models.layout import ADAPTER_FILE

__all__ = ["BASE", "RoleAdapters", "base_state_dict"]

BASE = "__base__"  # peft's name for "no adapter" in a mixed batch


def base_state_dict(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The base model's own state dict (original key names, no LoRA tensors) of an injected model."""
    return {
        k.replace(".base_layer.", "."): v for k, v in model.state_dict().items() if ".lora_" not in k
    }


class RoleAdapters:
    """The adapters ``config`` names on ``model`` (changed in place), and which role calls which.

    A's initialisation draws from a generator seeded with ``seed``, leaving the global RNG untouched.
    """

    def __init__(self, model: PreTrainedModel, config: PoliciesConfig, seed: int = 0) -> None:
        names = config.adapter_names()
        if not names:
            raise ValueError("policies.mode is `full`: there are no adapters to attach")
        self.config = config
        self.names = names
        self.base = model
        lora = LoraConfig(
            r=config.rank,
            lora_alpha=config.alpha,
            target_modules=list(config.target_modules),
            lora_dropout=0.0,  # dropout would make the teacher-forced audit differ from sampling
            bias="none",
        )
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.peft: PeftModel = get_peft_model(model, lora, adapter_name=names[0])
            for name in names[1:]:
                self.peft.add_adapter(name, lora)
        self._active: str | None = names[0]

    def adapter_for(self, role: str | None) -> str | None:
        return self.config.adapter_for(role)

    def parameters(self, name: str) -> list[torch.nn.Parameter]:
        """The trainable tensors of adapter ``name`` (its A and B matrices), in module order."""
        self._check(name)
        marker = f".{name}."
        return [p for n, p in self.peft.named_parameters() if ".lora_" in n and marker in n]

    # -- which adapter runs ----------------------------------------------------------------------------

    def select(self, name: str | None) -> None:
        """Run the model through ``name`` (None: the base); a selected adapter's tensors require grad."""
        if name == self._active:
            return
        tuner: Any = self.peft.base_model  # peft's LoraModel
        if name is None:
            tuner.disable_adapter_layers()
        else:
            self._check(name)
            tuner.enable_adapter_layers()
            tuner.set_adapter(name)
        self._active = name

    @contextlib.contextmanager
    def using(self, name: str | None) -> Iterator[None]:
        """``select(name)`` for the block, then back to the adapter selected before."""
        before = self._active
        self.select(name)
        try:
            yield
        finally:
            self.select(before)

    def forward(self, names: Sequence[str | None], **kwargs: Any) -> Any:
        """``model(**kwargs)`` with row ``i`` through adapter ``names[i]`` (None: the base).

        One adapter for every row runs as a plain forward with that adapter selected; several run as
        one peft mixed-adapter batch.
        """
        distinct = set(names)
        if len(distinct) == 1:
            with self.using(next(iter(distinct))):
                return self.base(**kwargs)
        if self.base.training:
            raise RuntimeError("mixed-adapter batches decode only: put the model in eval mode")
        self.peft.eval()  # peft checks its wrappers' mode, which the base model's eval() does not set
        with self.using(self.names[0]):  # mixed batches need the adapter layers enabled
            return self.peft(**kwargs, adapter_names=[BASE if n is None else n for n in names])

    # -- weights ---------------------------------------------------------------------------------------

    def state_dict(self, name: str) -> dict[str, torch.Tensor]:
        self._check(name)
        return get_peft_model_state_dict(self.peft, adapter_name=name)

    def load_state_dict(self, name: str, state: Mapping[str, torch.Tensor]) -> None:
        """Replace adapter ``name``'s tensors; every one of them must be in ``state``, nothing else."""
        self._check(name)
        expected = set(self.state_dict(name))
        if set(state) != expected:
            missing, extra = sorted(expected - set(state)), sorted(set(state) - expected)
            raise ValueError(
                f"adapter {name!r}: state does not match (missing {missing[:3]}, extra {extra[:3]})"
            )
        with torch.no_grad():
            set_peft_model_state_dict(self.peft, dict(state), adapter_name=name)

    def save(self, directory: Path) -> dict[str, Path]:
        """``directory/<name>/adapter_model.safetensors`` and ``adapter_config.json`` per adapter."""
        out = {}
        for name in self.names:
            target = directory / name
            target.mkdir(parents=True, exist_ok=True)
            tensors = {k: v.detach().contiguous().cpu() for k, v in self.state_dict(name).items()}
            save_file(tensors, target / ADAPTER_FILE)
            self.peft.peft_config[name].save_pretrained(str(target))
            out[name] = target / ADAPTER_FILE
        return out

    def load(self, directory: Path) -> None:
        """Load every adapter from ``save``'s layout in ``directory``."""
        for name in self.names:
            path = directory / name / ADAPTER_FILE
            if not path.is_file():
                raise FileNotFoundError(f"{path}: adapter {name!r} was not saved there")
            self.load_state_dict(name, load_file(str(path), device=str(self.device)))

    @property
    def device(self) -> torch.device:
        return next(self.base.parameters()).device

    def _check(self, name: str) -> None:
        if name not in self.names:
            raise KeyError(f"unknown adapter {name!r}; adapters: {self.names}")
