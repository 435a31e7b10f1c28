"""Tiny fp32 ResFormer/Llama configs shared by the model tests."""

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from doit.models import ResFormerConfig, ResFormerForCausalLM

MODES = ("vanilla", "resformer", "svformer")
LAYERS = 4
# GQA: 4 query heads share 2 KV heads. No special tokens, so generation never stops early.
TINY = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=LAYERS,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=128,
    max_position_embeddings=256,
    bos_token_id=None,
    eos_token_id=None,
    pad_token_id=None,
)


def make_model(value_mode="vanilla", attn="sdpa", seed=0, **fields) -> ResFormerForCausalLM:
    torch.manual_seed(seed)
    config = ResFormerConfig(**{**TINY, **fields}, value_mode=value_mode)
    return ResFormerForCausalLM._from_config(config, attn_implementation=attn).eval()


def make_llama(attn="sdpa", seed=0) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    return LlamaForCausalLM._from_config(LlamaConfig(**TINY), attn_implementation=attn).eval()


def random_ids(batch=2, length=12, seed=1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, TINY["vocab_size"], (batch, length), generator=g)
