"""A per-role model directory made for real (the embedded base plus a Generator and a Reviewer LoRA adapter,
saved as a trained run saves its final model), and what each role's adapter alone decodes from it."""

from __future__ import annotations

from pathlib import Path

import torch
from peft import PeftModel
from transformers import AutoModelForCausalLM, AutoTokenizer

from coding_framework.config.policies import PoliciesConfig
from coding_framework.embedded import ensure_embedded_model
from coding_framework.llm.adapters import RoleAdapters, base_state_dict
from coding_framework.llm.base import SamplingParams
from coding_framework.llm.local import LocalEngine

ROLES = ("generator", "reviewer")
PROMPT = "Write a function add(a, b)."
MAX_TOKENS = 12


def _perturb(adapters: RoleAdapters, name: str, seed: int) -> None:
    """Move an adapter off zero (a fresh LoRA's B is zero: it would compute exactly the base)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in adapters.parameters(name):
            p.add_(torch.randn(p.shape, generator=gen) * 0.05)


def build_per_role_dir(out: Path) -> Path:
    """``out``: the embedded base plus distinct Generator and Reviewer adapters, laid out as
    ``RolePolicies.save_model`` lays out a trained run's final model (the frozen base's own tensors, then
    ``adapters/<name>/``)."""
    src = ensure_embedded_model()
    model = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32)
    adapters = RoleAdapters(model, PoliciesConfig(mode="per_role_lora", rank=4, alpha=8), seed=0)
    for i, name in enumerate(adapters.names):
        _perturb(adapters, name, 100 + i)
    model.save_pretrained(out, state_dict=base_state_dict(model))
    adapters.save(out / "adapters")
    AutoTokenizer.from_pretrained(src).save_pretrained(out)
    return out


def alone(model_dir: Path, role: str | None) -> LocalEngine:
    """A local engine on the base with ONLY ``role``'s adapter, loaded by peft itself (None: the base)."""
    base = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    if role is not None:
        PeftModel.from_pretrained(base, str(model_dir / "adapters" / role))  # injects into ``base``
    return LocalEngine(base, AutoTokenizer.from_pretrained(model_dir), device="cpu")


def reference(model_dir: Path, role: str | None, prompt: str, max_tokens: int) -> tuple[str, int]:
    """The text and token count ``role``'s adapter alone decodes at T=0 for one user message."""
    engine = alone(model_dir, role)
    tok = engine.tokenizer
    text = tok.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                   add_generation_prompt=True)
    ids = list(tok(text, add_special_tokens=False)["input_ids"])
    gen = engine.generate(ids, SamplingParams(max_new_tokens=max_tokens, temperature=0.0))
    return gen.text, len(gen.token_ids)
