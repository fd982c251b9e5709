"""The TRL comparison's flags: --lora is smollm2_lora's recipe, TRL's LoraConfig adapts the modules our
RoleAdapters does, the embedded default keeps its budget, and a side's process gets the same settings."""

from __future__ import annotations

import torch
from peft import LoraConfig, get_peft_model
from transformers import LlamaConfig, LlamaForCausalLM

from benchmarks.training.trl_throughput import (
    OUT,
    RESULTS,
    _args,
    default_result,
    peft_kwargs,
    policies_config,
    side_argv,
)
from coding_framework.config.policies import PoliciesConfig
from coding_framework.llm.adapters import RoleAdapters


def test_lora_is_smollm2_loras_recipe() -> None:
    args = _args(["--model", "smollm2-135m", "--lora"])
    assert (args.lora_rank, args.lora_alpha, args.lr, args.eps) == (16, 32, 2e-4, 1e-8)
    assert (args.problems, args.group, args.max_tokens, args.temperature, args.micro_batch) == (
        4, 6, 160, 0.8, 8)
    assert (args.correctness, args.data, args.heldout_data, args.heldout_limit) == (
        "fraction", "mbpp:train", "mbpp:validation", 40)
    assert args.trl_gradient_checkpointing is False
    assert default_result(args) == RESULTS / "trl_throughput_smollm2_lora.json"
    assert _args(["--lora", "--lora-rank", "8", "--group", "4"]).lora_rank == 8


def test_the_embedded_default_keeps_its_budget_and_result_file() -> None:
    args = _args([])
    assert not args.lora and policies_config(args) is None and peft_kwargs(args) is None
    assert (args.problems, args.group, args.max_tokens, args.temperature, args.lr, args.eps) == (
        8, 8, 96, 0.5, 5e-4, 1e-4)
    assert (args.micro_batch, args.correctness, args.data, args.trl_gradient_checkpointing) == (
        32, "binary", "synthetic", True)
    assert default_result(args) == OUT


def test_a_side_gets_the_settings_the_parent_resolved() -> None:
    for argv in ([], ["--lora", "--steps", "1", "--heldout-limit", "0"], ["--no-trl-gradient-checkpointing"]):
        parent = _args(argv)
        side = _args(["--side", "trl", "--out", "x.json", "--model", "m", "--seeds", "0", *side_argv(parent)])
        differ = {k for k in vars(parent) if getattr(parent, k) != getattr(side, k)}
        assert differ <= {"side", "out", "model"}, differ


def test_trls_lora_config_adapts_the_modules_role_adapters_does() -> None:
    args = _args(["--lora"])
    tiny = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2)

    def lora_shapes(model: torch.nn.Module, adapter: str) -> dict[str, tuple[int, ...]]:
        return {n.replace(f".{adapter}.", "."): tuple(p.shape) for n, p in model.named_parameters()
                if ".lora_" in n}

    def scalings(model: torch.nn.Module, adapter: str) -> set[float]:
        return {m.scaling[adapter] for m in model.modules() if isinstance(getattr(m, "scaling", None), dict)}

    torch.manual_seed(0)
    ours = RoleAdapters(LlamaForCausalLM(tiny), PoliciesConfig.model_validate(policies_config(args)))
    theirs = get_peft_model(LlamaForCausalLM(tiny), LoraConfig(**peft_kwargs(args)))
    ours_shapes, trl_shapes = lora_shapes(ours.peft, "policy"), lora_shapes(theirs, "default")
    assert ours_shapes == trl_shapes and len(ours_shapes) == 2 * 7 * 2  # A and B, 7 Linears, 2 layers
    assert scalings(ours.peft, "policy") == scalings(theirs, "default") == {2.0}  # alpha / rank
