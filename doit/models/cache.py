"""KV cache for SVFormer: keys for every layer, values once (layer 0's).

In SVFormer every layer that reuses V_1 attends with layer 0's values, so caching them once is
exact. For L layers that all share, the cache holds L key tensors and 1 value tensor, i.e.
(L + 1) / (2L) of a vanilla cache (56% at 8 layers, 52% at 24), on top of any GQA saving.

`SharedValueLayer` subclasses transformers' `DynamicLayer`: it keeps its own keys and an empty
(zero-length) value tensor, so the stock crop / beam-search reorder / batch select methods work
unchanged, and its `update` returns the source layer's values. The source layer must be updated
first in each forward pass, which holds because layer 0 runs first.

Measure a cache with `cache_nbytes(cache)` (any transformers cache) or `SVFormerCache.nbytes()`.
"""

from __future__ import annotations

import torch
from transformers.cache_utils import Cache, DynamicCache, DynamicLayer


class SharedValueLayer(DynamicLayer):
    """Cache layer that stores keys only and serves the values of `source`."""

    def __init__(self, source: DynamicLayer):
        super().__init__()
        self.source = source

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        super().lazy_initialization(key_states, value_states)
        # Zero-length along the sequence: holds no bytes but keeps the stock layer methods valid.
        batch, heads, _, head_dim = value_states.shape
        self.values = value_states.new_empty((batch, heads, 0, head_dim))

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Append `key_states`; `value_states` (layer 0's new values) are already in `source`."""
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        self.keys = torch.cat([self.keys, key_states], dim=-2)
        values = self.source.values
        if values is None or values.shape[-2] != self.keys.shape[-2]:
            cached = None if values is None else values.shape[-2]
            raise RuntimeError(
                f"SVFormer cache out of sync: {self.keys.shape[-2]} keys but {cached} shared values. "
                "Layer 0 must be updated before the layers that reuse its values."
            )
        return self.keys, values


class SVFormerCache(DynamicCache):
    """`DynamicCache` whose value-sharing layers store keys only (see module docstring).

    Build it from a `ResFormerConfig`; `ResFormerForCausalLM` does so by default in svformer mode,
    both in `forward(use_cache=True)` and in `generate()`.
    """

    def __init__(self, config):
        shared = set(config.value_residual_layers()) if config.value_mode == "svformer" else set()
        source = DynamicLayer()
        layers = [source] + [
            SharedValueLayer(source) if i in shared else DynamicLayer()
            for i in range(1, config.num_hidden_layers)
        ]
        # Skip DynamicCache.__init__, which would build stock layers from the config.
        Cache.__init__(self, layers=layers)

    def nbytes(self) -> int:
        """Bytes held by the cached keys and values."""
        return cache_nbytes(self)


def cache_nbytes(cache: Cache) -> int:
    """Bytes of all key/value tensors held by a transformers cache (counts each tensor once)."""
    tensors = {}
    for layer in cache.layers:
        for t in (getattr(layer, "keys", None), getattr(layer, "values", None)):
            if isinstance(t, torch.Tensor):
                tensors[id(t)] = t.numel() * t.element_size()
    return sum(tensors.values())


__all__ = ["SVFormerCache", "SharedValueLayer", "cache_nbytes"]
