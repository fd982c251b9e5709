"""The embedded model's network: a small Qwen2 causal LM, randomly initialised from a seed."""

from __future__ import annotations

import torch
from transformers import GenerationConfig, PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

from coding_framework.config.embedded import ArchitectureConfig


def qwen2_config(arch: ArchitectureConfig, tokenizer: PreTrainedTokenizerFast) -> Qwen2Config:
    return Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=arch.hidden_size,
        intermediate_size=arch.intermediate_size,
        num_hidden_layers=arch.num_layers,
        num_attention_heads=arch.num_heads,
        num_key_value_heads=arch.num_kv_heads,
        max_position_embeddings=arch.max_positions,
        rope_parameters={"rope_type": "default", "rope_theta": arch.rope_theta},
        tie_word_embeddings=arch.tie_embeddings,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        dtype="float32",
        architectures=["Qwen2ForCausalLM"],
    )


def init_model(arch: ArchitectureConfig, tokenizer: PreTrainedTokenizerFast, seed: int) -> Qwen2ForCausalLM:
    """A randomly initialised model; the same seed gives the same weights."""
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(qwen2_config(arch, tokenizer))
    model.generation_config = GenerationConfig(
        eos_token_id=[tokenizer.eos_token_id, tokenizer.pad_token_id],
        pad_token_id=tokenizer.pad_token_id,
        do_sample=True,
        temperature=1.0,
        top_p=1.0,
    )
    return model
