"""Tiny bases for the recipe tests: a byte-level BPE tokenizer trained on the fixture corpus
(no speaker tokens: the recipe must add them) and a random 2-layer Llama or ResFormer."""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from tests.tiny import bare_byte_bpe

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "doit_download"
VOCAB = 384
SHAPE = dict(
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=256,
    tie_word_embeddings=False,
)


def fixture_text() -> list[str]:
    return [p.read_text(encoding="utf-8") for p in sorted(FIXTURE.rglob("*.json"))]


def train_tokenizer(extra_text: list[str] = ()) -> PreTrainedTokenizerFast:
    return bare_byte_bpe([*fixture_text(), *extra_text], VOCAB)


def make_base(out: Path, arch: str = "llama", hidden: int = 32, seed: int = 0) -> Path:
    """Save a tokenizer and a random causal LM of width ``hidden`` to ``out``."""
    tokenizer = train_tokenizer()
    fields = dict(
        SHAPE,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        vocab_size=len(tokenizer),
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=None,
    )
    torch.manual_seed(seed)
    if arch == "llama":
        model = LlamaForCausalLM(LlamaConfig(**fields))
    else:
        from doit.models import ResFormerConfig, ResFormerForCausalLM

        config = ResFormerConfig(**fields, value_mode="resformer", value_learnable=True)
        model = ResFormerForCausalLM(config)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
