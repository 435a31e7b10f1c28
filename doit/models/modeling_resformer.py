"""ResFormer / SVFormer as transformers models, built from transformers' Llama blocks.

The value residual is `ResFormerAttention.project_values`: layer 0 returns its values V_1, the
model hands them to every later layer as an explicit argument, and a mixing layer attends with
l1 * V_1 + l2 * V_n (ResFormer) or with V_1 itself (SVFormer, no `v_proj`). The mix happens before
the GQA head repeat (inside the attention function) and before the KV-cache write, so a cache
holds exactly the values each layer attended with.

Parameter names match `LlamaForCausalLM`, so Llama weights load directly in vanilla and resformer
modes (`from_llama`). Packed sequences: pass `position_ids` that restart at 0 for each sequence,
no `attention_mask`, and `use_cache=False` (as for Llama; transformers only detects packing
without a cache).
"""

from __future__ import annotations

import os
from collections.abc import Callable

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint
from transformers import GenerationMixin, LlamaForCausalLM, PreTrainedModel
from transformers import initialization as init
from transformers.cache_utils import Cache, DynamicCache
from transformers.masking_utils import create_causal_mask
from transformers.modeling_layers import GradientCheckpointingLayer
from transformers.modeling_outputs import BaseModelOutputWithPast, CausalLMOutputWithPast
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS, slice_logits_to_keep
from transformers.models.llama.modeling_llama import (
    LlamaMLP,
    LlamaRMSNorm,
    LlamaRotaryEmbedding,
    apply_rotary_pos_emb,
    eager_attention_forward,
)
from transformers.utils.deprecation import deprecate_kwarg
from transformers.utils.generic import can_return_tuple, merge_with_config_defaults
from transformers.utils.output_capturing import capture_outputs

from .cache import SVFormerCache
from .configuration_resformer import ResFormerConfig


class ResFormerAttention(nn.Module):
    """Llama attention whose values may come from layer 0 (the value residual)."""

    def __init__(self, config: ResFormerConfig, layer_idx: int):
        super().__init__()
        self.config = config
        self.layer_idx = layer_idx
        self.head_dim = config.head_dim
        self.num_key_value_groups = config.num_attention_heads // config.num_key_value_heads
        self.scaling = self.head_dim**-0.5
        self.attention_dropout = config.attention_dropout
        self.is_causal = True

        mixes = layer_idx in config.value_residual_layers()
        self.reuses_first_values = mixes and config.value_mode == "svformer"
        self.mixes_values = mixes and config.value_mode == "resformer"
        q_dim = config.num_attention_heads * self.head_dim
        kv_dim = config.num_key_value_heads * self.head_dim
        bias = config.attention_bias
        self.q_proj = nn.Linear(config.hidden_size, q_dim, bias)
        self.k_proj = nn.Linear(config.hidden_size, kv_dim, bias)
        if not self.reuses_first_values:  # SVFormer's sharing layers own no v_proj
            self.v_proj = nn.Linear(config.hidden_size, kv_dim, bias)
        self.o_proj = nn.Linear(q_dim, config.hidden_size, bias)

        self.fixed_lambdas = tuple(config.value_lambdas)  # (l1, l2) when not learnable
        if self.mixes_values and config.value_learnable:  # initialised in `_init_weights`
            self.value_lambda1 = nn.Parameter(torch.empty(1))
            self.value_lambda2 = nn.Parameter(torch.empty(1))

    def project_values(self, hidden_states: torch.Tensor, first_values: torch.Tensor | None):
        """This layer's values, shape (batch, kv_heads, seq, head_dim): the value residual."""
        if self.reuses_first_values:  # SVFormer: V_n = V_1
            return first_values
        if self.mixes_values and self.config.value_learnable and torch.is_grad_enabled():
            # l2's gradient needs V_n, which nothing else keeps for backward: recompute it (one
            # v_proj) rather than store it; the inputs are already saved by q_proj and layer 1.
            return checkpoint(self._values, hidden_states, first_values, use_reentrant=False)
        return self._values(hidden_states, first_values)

    def _values(self, hidden_states: torch.Tensor, first_values: torch.Tensor | None):
        values = self.v_proj(hidden_states)
        values = values.view(*hidden_states.shape[:-1], -1, self.head_dim).transpose(1, 2)
        if not self.mixes_values:
            return values
        if self.config.value_learnable:
            l1, l2 = self.value_lambda1, self.value_lambda2
        else:
            l1, l2 = self.fixed_lambdas
        return l1 * first_values + l2 * values  # ResFormer: V'_n = l1 V_1 + l2 V_n

    def forward(
        self,
        hidden_states: torch.Tensor,
        position_embeddings: tuple[torch.Tensor, torch.Tensor],
        attention_mask: torch.Tensor | None = None,
        first_values: torch.Tensor | None = None,
        cache: Cache | None = None,
        **kwargs,
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
        """Returns (output, attention weights or None, this layer's values before caching)."""
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)
        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.project_values(hidden_states, first_values)
        cos, sin = position_embeddings
        query_states, key_states = apply_rotary_pos_emb(query_states, key_states, cos, sin)

        keys, values = key_states, value_states
        if cache is not None:
            keys, values = cache.update(key_states, value_states, self.layer_idx, kwargs=kwargs)

        attention_interface: Callable = ALL_ATTENTION_FUNCTIONS.get_interface(
            self.config._attn_implementation, eager_attention_forward
        )
        attn_output, attn_weights = attention_interface(
            self,
            query_states,
            keys,
            values,
            attention_mask,
            dropout=0.0 if not self.training else self.attention_dropout,
            scaling=self.scaling,
            **kwargs,
        )
        attn_output = self.o_proj(attn_output.reshape(*input_shape, -1).contiguous())
        return attn_output, attn_weights, value_states


class ResFormerDecoderLayer(GradientCheckpointingLayer):
    """Pre-norm Llama block that also passes values along: returns (hidden_states, values)."""

    def __init__(self, config: ResFormerConfig, layer_idx: int):
        super().__init__()
        self.hidden_size = config.hidden_size
        self.self_attn = ResFormerAttention(config, layer_idx)
        self.mlp = LlamaMLP(config)
        self.input_layernorm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(
        self,
        hidden_states: torch.Tensor,
        first_values: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.LongTensor | None = None,
        cache: Cache | None = None,
        use_cache: bool | None = False,
        position_embeddings: tuple[torch.Tensor, torch.Tensor] | None = None,
        **kwargs,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        attn_output, _, values = self.self_attn(
            self.input_layernorm(hidden_states),
            position_embeddings=position_embeddings,
            attention_mask=attention_mask,
            first_values=first_values,
            position_ids=position_ids,
            cache=cache,
            use_cache=use_cache,
            **kwargs,
        )
        hidden_states = hidden_states + attn_output
        hidden_states = hidden_states + self.mlp(self.post_attention_layernorm(hidden_states))
        return hidden_states, values


class ResFormerPreTrainedModel(PreTrainedModel):
    config: ResFormerConfig
    config_class = ResFormerConfig
    base_model_prefix = "model"
    supports_gradient_checkpointing = True
    _no_split_modules = ["ResFormerDecoderLayer"]
    _supports_flash_attn = True
    _supports_sdpa = True
    _supports_flex_attn = True
    _supports_attention_backend = True
    _can_record_outputs = {
        "hidden_states": ResFormerDecoderLayer,
        "attentions": ResFormerAttention,
    }

    @torch.no_grad()
    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        if isinstance(module, ResFormerAttention) and hasattr(module, "value_lambda1"):
            l1, l2 = self.config.value_lambdas
            init.constant_(module.value_lambda1, l1)
            init.constant_(module.value_lambda2, l2)


class ResFormerModel(ResFormerPreTrainedModel):
    def __init__(self, config: ResFormerConfig):
        super().__init__(config)
        self.padding_idx = config.pad_token_id
        self.vocab_size = config.vocab_size
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, self.padding_idx)
        self.layers = nn.ModuleList(
            [ResFormerDecoderLayer(config, i) for i in range(config.num_hidden_layers)]
        )
        self.norm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.rotary_emb = LlamaRotaryEmbedding(config=config)
        self.gradient_checkpointing = False
        self.post_init()

    def new_cache(self) -> DynamicCache:
        """The cache this model uses by default: keys-for-all, values-once in svformer mode."""
        if self.config.value_mode == "svformer":
            return SVFormerCache(self.config)
        return DynamicCache(config=self.config)

    @deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")  # as Llama
    @merge_with_config_defaults
    @capture_outputs
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.LongTensor | None = None,
        cache: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        use_cache: bool | None = None,
        **kwargs,
    ) -> BaseModelOutputWithPast:
        if (input_ids is None) ^ (inputs_embeds is not None):
            raise ValueError("You must specify exactly one of input_ids or inputs_embeds")
        if inputs_embeds is None:
            inputs_embeds = self.embed_tokens(input_ids)
        if use_cache and cache is None:
            cache = self.new_cache()
        if position_ids is None:
            past_seen_tokens = cache.get_seq_length() if cache is not None else 0
            position_ids = torch.arange(inputs_embeds.shape[1], device=inputs_embeds.device)
            position_ids = (position_ids + past_seen_tokens).unsqueeze(0)

        causal_mask = create_causal_mask(
            config=self.config,
            inputs_embeds=inputs_embeds,
            attention_mask=attention_mask,
            cache=cache,
            position_ids=position_ids,
        )
        hidden_states = inputs_embeds
        position_embeddings = self.rotary_emb(hidden_states, position_ids=position_ids)

        first_values = None  # V_1, handed from layer 0 to all later layers
        for layer in self.layers[: self.config.num_hidden_layers]:
            hidden_states, values = layer(
                hidden_states,
                first_values,
                attention_mask=causal_mask,
                position_embeddings=position_embeddings,
                position_ids=position_ids,
                cache=cache,
                use_cache=use_cache,
                **kwargs,
            )
            if first_values is None:
                first_values = values

        hidden_states = self.norm(hidden_states)
        return BaseModelOutputWithPast(last_hidden_state=hidden_states, cache=cache)


class ResFormerForCausalLM(ResFormerPreTrainedModel, GenerationMixin):
    _tied_weights_keys = {"lm_head.weight": "model.embed_tokens.weight"}
    _tp_plan = {"lm_head": "colwise_gather_output"}

    def __init__(self, config: ResFormerConfig):
        super().__init__(config)
        self.model = ResFormerModel(config)
        self.vocab_size = config.vocab_size
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.post_init()

    @deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")  # as Llama
    @can_return_tuple
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.LongTensor | None = None,
        cache: Cache | None = None,
        inputs_embeds: torch.Tensor | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        logits_to_keep: int | torch.Tensor = 0,
        **kwargs,
    ) -> CausalLMOutputWithPast:
        outputs: BaseModelOutputWithPast = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            cache=cache,
            inputs_embeds=inputs_embeds,
            use_cache=use_cache,
            **kwargs,
        )
        hidden_states = slice_logits_to_keep(outputs.last_hidden_state, logits_to_keep)
        logits = self.lm_head(hidden_states)
        loss = None
        if labels is not None:
            loss = self.loss_function(
                logits=logits, labels=labels, vocab_size=self.config.vocab_size, **kwargs
            )
        return CausalLMOutputWithPast(
            loss=loss,
            logits=logits,
            cache=outputs.cache,
            hidden_states=outputs.hidden_states,
            attentions=outputs.attentions,
        )

    def _prepare_cache_for_generation(self, generation_config, model_kwargs, *args, **kwargs):
        """GenerationMixin hook: in svformer mode, swap the default DynamicCache for an SVFormerCache.

        A cache passed by the caller, or another `cache_implementation` (static, offloaded,
        quantized), is kept: stock caches give exact results but store values for every layer.
        """
        super()._prepare_cache_for_generation(generation_config, model_kwargs, *args, **kwargs)
        cache = model_kwargs.get("cache")
        if (
            self.config.value_mode == "svformer"
            and type(cache) is DynamicCache
            and not getattr(cache, "_is_user_defined", False)
            and generation_config.cache_implementation in (None, "dynamic")
        ):
            model_kwargs["cache"] = self.model.new_cache()


def from_llama(
    llama: LlamaForCausalLM | str | os.PathLike, value_mode: str = "resformer", **value_kwargs
) -> ResFormerForCausalLM:
    """Build a ResFormer/SVFormer from Llama weights (a model or a checkpoint directory).

    One way only: the result has `model_type="resformer"`. Every Llama weight is copied; in
    svformer mode the `v_proj` of value-sharing layers is dropped, and learnable mixing scalars
    start at `value_lambdas`. `value_kwargs` are further `ResFormerConfig` value fields.
    """
    if not isinstance(llama, PreTrainedModel):
        llama = LlamaForCausalLM.from_pretrained(llama)
    if llama.config.model_type != "llama":
        raise ValueError(
            f"from_llama needs a Llama model, got model_type={llama.config.model_type!r}"
        )
    fields = llama.config.to_dict()
    for key in ("model_type", "architectures", "transformers_version", "_name_or_path"):
        fields.pop(key, None)
    config = ResFormerConfig(**fields, value_mode=value_mode, **value_kwargs)
    config._attn_implementation = llama.config._attn_implementation
    model = ResFormerForCausalLM(config).to(device=llama.device, dtype=llama.dtype)

    missing, unexpected = model.load_state_dict(llama.state_dict(), strict=False)
    bad_missing = [k for k in missing if ".value_lambda" not in k]
    shared = config.value_residual_layers() if value_mode == "svformer" else []
    dropped = {f"model.layers.{i}.self_attn.v_proj.{p}" for i in shared for p in ("weight", "bias")}
    bad_unexpected = [k for k in unexpected if k not in dropped]
    if bad_missing or bad_unexpected:
        raise ValueError(
            f"Llama weights do not fit the ResFormer model: missing {bad_missing}, "
            f"unexpected {bad_unexpected}."
        )
    return model


__all__ = [
    "ResFormerForCausalLM",
    "ResFormerModel",
    "ResFormerPreTrainedModel",
    "from_llama",
]
