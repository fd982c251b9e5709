"""A KV cache for batched decoding that preallocates its length and copies only when rows leave it.

transformers' ``DynamicCache`` appends each decoded token with ``torch.cat``, copying the whole cache at
every step; on CPU those copies cost about as much as the small model's own forward pass. Here every layer
writes into a buffer sized for prompt plus budget up front, and attention reads a view of its filled part.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import Cache, DynamicCache
from transformers.cache_utils import DynamicLayer


class PreallocatedLayer(DynamicLayer):
    """A ``DynamicLayer`` whose keys and values are views into a (B, H, capacity, D) buffer."""

    def __init__(self, capacity: int) -> None:
        super().__init__()
        self.capacity = capacity
        self.length = 0

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.dtype, self.device = key_states.dtype, key_states.device
        batch, heads = key_states.shape[:2]
        self._k = key_states.new_empty((batch, heads, self.capacity, key_states.shape[-1]))
        self._v = value_states.new_empty((batch, heads, self.capacity, value_states.shape[-1]))
        self._expose()
        self.is_initialized = True

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        end = self.length + key_states.shape[-2]
        if end > self.capacity:
            raise ValueError(f"KV cache of {self.capacity} positions cannot hold {end}")
        self._k[:, :, self.length : end] = key_states
        self._v[:, :, self.length : end] = value_states
        self.length = end
        return self._expose()

    def get_seq_length(self) -> int:
        return self.length

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        """Keep (or repeat) the rows ``indices``; copies only the filled positions."""
        if not self.is_initialized:
            return
        k = self._k.new_empty((len(indices), *self._k.shape[1:]))
        v = self._v.new_empty((len(indices), *self._v.shape[1:]))
        k[:, :, : self.length] = self._k[indices, :, : self.length]
        v[:, :, : self.length] = self._v[indices, :, : self.length]
        self._k, self._v = k, v
        self._expose()

    def _expose(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Point ``keys`` and ``values`` at the filled part of the buffers, and return them."""
        self.keys, self.values = self._k[:, :, : self.length], self._v[:, :, : self.length]
        return self.keys, self.values


def decoding_cache(config: Any, capacity: int) -> Cache:
    """A preallocated cache for a model whose layers all use full attention, else transformers' own."""
    layer_types = getattr(config, "layer_types", None) or ["full_attention"]
    if getattr(config, "use_sliding_window", False) or any(t != "full_attention" for t in layer_types):
        return DynamicCache(config=config)
    return Cache(layers=[PreallocatedLayer(capacity) for _ in range(config.num_hidden_layers)])
