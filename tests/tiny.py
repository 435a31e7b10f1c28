"""Tiny tokenizers and models built in-process (no downloads), shared by tests."""

from __future__ import annotations

import json
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from doit.models.chat import prepare_tokenizer

FIXTURE = Path(__file__).parent / "fixtures" / "doit_download"


def fixture_texts() -> list[str]:
    texts = []
    for f in sorted(FIXTURE.rglob("*.json")):
        raw = f.read_text(encoding="utf-8")
        recs = (
            json.loads(raw)
            if raw.lstrip().startswith("[")
            else [json.loads(x) for x in raw.splitlines()]
        )
        texts += [m["content"] for r in recs for m in r["messages"]] + [
            c for r in recs for c in r.get("choices", [])
        ]
    return texts


def bare_byte_bpe(texts: list[str], vocab_size: int = 400) -> PreTrainedTokenizerFast:
    """Byte-level BPE (GPT-2 style: no space marker), <pad> and </s>, no chat template."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<pad>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", model_max_length=512
    )


def byte_bpe_tokenizer(
    texts: list[str] | None = None, vocab_size: int = 400
) -> PreTrainedTokenizerFast:
    """``bare_byte_bpe`` on the fixture texts, with the doit speaker template."""
    fast = bare_byte_bpe(texts or fixture_texts(), vocab_size)
    prepare_tokenizer(fast)
    return fast


def metaspace_tokenizer(
    texts: list[str] | None = None, vocab_size: int = 400
) -> PreTrainedTokenizerFast:
    """SentencePiece-style (Metaspace, "▁" prefix) BPE, like LLaMA's, with the speaker template."""
    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=["<unk>", "<pad>", "</s>"], show_progress=False
    )
    tok.train_from_iterator((texts or fixture_texts()) + ["A B C D E F"], trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>",
        pad_token="<pad>",
        eos_token="</s>",
        model_max_length=512,
    )
    prepare_tokenizer(fast)
    return fast


def tiny_llama(tokenizer, hidden: int = 64, layers: int = 2, seed: int = 0) -> LlamaForCausalLM:
    import torch

    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
        tie_word_embeddings=False,
    )
    return LlamaForCausalLM(cfg)


def continuation_logprob(model, context: list[int], continuation: list[int]) -> float:
    """Summed log-probability of ``continuation`` after ``context``, from one forward pass."""
    import torch

    with torch.no_grad():
        logits = model(torch.tensor([context + continuation])).logits[0].float()
    logprobs = torch.log_softmax(logits[len(context) - 1 : -1], -1)
    return float(sum(logprobs[i, t] for i, t in enumerate(continuation)))
