"""Activation memory as the value-residual goals define it: what autograd keeps for backward."""

from __future__ import annotations

import torch
from torch import nn


def saved_activation_bytes(model: nn.Module, ids: torch.Tensor) -> int:
    """Bytes of the distinct non-parameter storages autograd saves for backward in one causal-LM
    forward on ``ids`` (a storage saved by several ops counts once); runs the backward and leaves
    the gradients cleared."""
    param_storages = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in param_storages:
            saved[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        loss = model(ids, labels=ids, use_cache=False).loss
    loss.backward()
    model.zero_grad(set_to_none=True)
    return sum(saved.values())


__all__ = ["saved_activation_bytes"]
