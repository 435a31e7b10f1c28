"""Configuration for ResFormer / SVFormer: a Llama config plus the value-residual fields.

Value residual learning (Zhou et al., ACL 2025, arXiv 2410.17897): layer 1 keeps its projected
values V_1 and later layers reuse them.

- ``value_mode="vanilla"``: exactly Llama.
- ``value_mode="resformer"``: layer n >= 2 attends with V'_n = l1 * V_1 + l2 * V_n.
- ``value_mode="svformer"``: layer n >= 2 attends with V_1 and owns no ``v_proj``.

Layers are numbered from 1 in the paper but from 0 in code and parameter names
(``model.layers.{i}``); ``value_layers`` uses the code numbering, so layer 1 of the paper is index
0 and is always the value source.
"""

from __future__ import annotations

import math

from huggingface_hub.dataclasses import strict
from transformers import LlamaConfig

VALUE_MODES = ("vanilla", "resformer", "svformer")


@strict
class ResFormerConfig(LlamaConfig):
    """`LlamaConfig` with value-residual fields; every Llama field keeps its meaning.

    Args:
        value_mode: ``"vanilla"``, ``"resformer"`` or ``"svformer"``.
        value_lambdas: ``(l1, l2)`` in V'_n = l1 * V_1 + l2 * V_n (resformer). Fixed numbers unless
            ``value_learnable``, in which case they are the initial values of per-layer parameters.
            Paper default: (0.5, 0.5).
        value_learnable: resformer only; each mixing layer gets two learnable scalars
            ``self_attn.value_lambda1`` / ``value_lambda2`` initialised from ``value_lambdas``.
        value_layers: 0-based indices of the layers that reuse V_1 (each in 1..L-1). ``None``
            means all layers 1..L-1. The paper's sparse variant mixes only the last third of
            layers with ``value_lambdas=(5, 1)``.
    """

    model_type = "resformer"
    # A layer returns (hidden_states, values), so Llama's pipeline-parallel plan does not apply.
    base_model_pp_plan = None

    value_mode: str = "vanilla"
    value_lambdas: tuple[float | int, ...] | list[float | int] = (0.5, 0.5)
    value_learnable: bool = False
    value_layers: tuple[int, ...] | list[int] | None = None

    def __post_init__(self, **kwargs):
        # JSON gives lists and users may write ints: store one canonical form.
        self.value_lambdas = tuple(float(x) for x in self.value_lambdas)
        if self.value_layers is not None:
            self.value_layers = sorted(int(i) for i in self.value_layers)
        super().__post_init__(**kwargs)

    def validate_value_residual(self):
        """Part of `@strict` validation: runs on construction, loading and saving."""
        if self.value_mode not in VALUE_MODES:
            raise ValueError(f"value_mode must be one of {VALUE_MODES}, got {self.value_mode!r}.")
        lambdas = self.value_lambdas
        if len(lambdas) != 2 or not all(math.isfinite(x) for x in lambdas):
            raise ValueError(f"value_lambdas must be two finite numbers (l1, l2), got {lambdas!r}.")
        if self.value_learnable and self.value_mode != "resformer":
            raise ValueError(
                f"value_learnable=True needs value_mode='resformer' (got {self.value_mode!r}): "
                "only the ResFormer mix has scalars to learn."
            )
        layers = self.value_layers
        if layers is None:
            return
        if self.value_mode == "vanilla":
            raise ValueError(
                "value_layers is set but value_mode='vanilla'; drop it or pick a mode."
            )
        last = self.num_hidden_layers - 1
        bad = [i for i in layers if not 1 <= i <= last]
        if bad or len(set(layers)) != len(layers) or not layers:
            raise ValueError(
                f"value_layers must be distinct 0-based layer indices in 1..{last} (layer 0 is the "
                f"value source), got {list(layers)}."
            )

    def value_residual_layers(self) -> list[int]:
        """0-based indices of the layers that reuse layer 0's values (empty in vanilla mode)."""
        if self.value_mode == "vanilla":
            return []
        if self.value_layers is None:
            return list(range(1, self.num_hidden_layers))
        return list(self.value_layers)


__all__ = ["ResFormerConfig", "VALUE_MODES"]
