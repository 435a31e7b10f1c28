"""Tiny tokenizers, models, bases and grids built in-process (no downloads): the one builder
the tests and the benches share. Nothing here reads the repository; folders and texts come in
as arguments, and each builder is seeded, so the same call gives the same weights.

- ``corpus_texts(folder)`` / ``file_texts(folder)``: tokenizer training text from a DoIT folder
  (the messages and choices of every record / every JSON file's raw text);
- ``byte_bpe(texts, vocab_size)``: byte-level BPE (GPT-2 style, no space marker) with ``<pad>``
  and ``</s>``; ``chat=True`` adds the doit speaker template (``doit.models.chat``);
  ``metaspace_bpe(texts, vocab_size)``: SentencePiece-style BPE like LLaMA's, with the template;
- ``tiny_llama(tokenizer, hidden, layers, seed)``: a random Llama sized to a tokenizer;
- ``TINY``, ``tiny_model(arch, attn, seed, **fields)``, ``random_ids``: fp32 ResFormer / Llama
  models of a fixed 128-token vocabulary without special tokens, for model-level tests;
- ``save_tiny_base(out, tokenizer, arch, hidden, ...)``: a tokenizer and a random causal LM
  saved as a base folder (what recipes and grids load);
- ``tiny_grid(base, doit_dir, sft_config)`` and ``write_grid``: a three-cell study grid;
- ``continuation_logprob``: a reference scorer, independent of ``doit.eval``.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

# Model-level tests: 4 layers, GQA (4 query heads share 2 KV heads), no special tokens, so
# generation never stops early.
TINY = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=4,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=128,
    max_position_embeddings=256,
    bos_token_id=None,
    eos_token_id=None,
    pad_token_id=None,
)
GRID_BUDGETS = {"mc": 4, "tf": 4, "multiselect": 4, "cloze": 4, "math": 8}


# --- tokenizers -------------------------------------------------------------------------------
def corpus_texts(folder) -> list[str]:
    """Every message's content and every choice of the records in ``folder``'s JSON files
    (a JSON array or JSON lines each), files in sorted order."""
    texts = []
    for f in sorted(Path(folder).rglob("*.json")):
        raw = f.read_text(encoding="utf-8")
        recs = (
            json.loads(raw)
            if raw.lstrip().startswith("[")
            else [json.loads(x) for x in raw.splitlines()]
        )
        texts += [m["content"] for r in recs for m in r["messages"]]
        texts += [c for r in recs for c in r.get("choices", [])]
    return texts


def file_texts(folder) -> list[str]:
    """The raw text of every JSON file under ``folder``, in sorted order."""
    return [p.read_text(encoding="utf-8") for p in sorted(Path(folder).rglob("*.json"))]


def byte_bpe(texts, vocab_size: int = 400, *, chat: bool = False, model_max_length: int = 512):
    """A byte-level BPE ``PreTrainedTokenizerFast`` trained on ``texts``: ``<pad>`` (id 0) and
    ``</s>`` (id 1), no chat template unless ``chat``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

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
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="</s>", model_max_length=model_max_length
    )
    if chat:
        _add_chat(fast)
    return fast


def metaspace_bpe(texts, vocab_size: int = 400):
    """SentencePiece-style BPE (Metaspace, "▁" prefix, byte fallback) like LLaMA's, trained on
    ``texts`` plus the option letters, with the doit speaker template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=["<unk>", "<pad>", "</s>"], show_progress=False
    )
    tok.train_from_iterator([*texts, "A B C D E F"], trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>",
        pad_token="<pad>",
        eos_token="</s>",
        model_max_length=512,
    )
    _add_chat(fast)
    return fast


def _add_chat(tokenizer) -> None:
    from doit.models.chat import prepare_tokenizer

    prepare_tokenizer(tokenizer)


# --- models -----------------------------------------------------------------------------------
def _lm_fields(tokenizer, hidden: int, layers: int, kv_heads: int, max_positions: int) -> dict:
    return dict(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=kv_heads,
        max_position_embeddings=max_positions,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
        tie_word_embeddings=False,
    )


def tiny_llama(
    tokenizer,
    hidden: int = 64,
    layers: int = 2,
    seed: int = 0,
    max_positions: int = 512,
    kv_heads: int = 2,
):
    """A random Llama (4 heads, FFN 2 x hidden) over ``tokenizer``'s vocabulary, in train mode."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    return LlamaForCausalLM(
        LlamaConfig(**_lm_fields(tokenizer, hidden, layers, kv_heads, max_positions))
    )


def tiny_model(arch: str = "vanilla", attn: str = "sdpa", seed: int = 0, **fields):
    """A random fp32 model of ``TINY`` (``fields`` override it) in eval mode: a Llama for
    ``arch="llama"``, else a ResFormer with ``value_mode=arch``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from doit.models import ResFormerConfig, ResFormerForCausalLM

    torch.manual_seed(seed)
    if arch == "llama":
        model = LlamaForCausalLM._from_config(
            LlamaConfig(**{**TINY, **fields}), attn_implementation=attn
        )
    else:
        config = ResFormerConfig(**{**TINY, **fields}, value_mode=arch)
        model = ResFormerForCausalLM._from_config(config, attn_implementation=attn)
    return model.eval()


def random_ids(batch: int = 2, length: int = 12, seed: int = 1, vocab_size: int = 128):
    """(batch, length) token ids drawn uniformly from ``TINY``'s vocabulary."""
    import torch

    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab_size, (batch, length), generator=g)


def save_tiny_base(
    out,
    tokenizer,
    arch: str = "llama",
    hidden: int = 32,
    layers: int = 2,
    kv_heads: int = 2,
    max_positions: int = 256,
    seed: int = 0,
) -> Path:
    """Save ``tokenizer`` and a random causal LM of width ``hidden`` to ``out``: a Llama, or
    (``arch="resformer"``) a ResFormer with a learnable value mix."""
    import torch

    fields = _lm_fields(tokenizer, hidden, layers, kv_heads, max_positions)
    if arch == "llama":
        model = tiny_llama(tokenizer, hidden, layers, seed, max_positions, kv_heads)
    else:
        from doit.models import ResFormerConfig, ResFormerForCausalLM

        torch.manual_seed(seed)
        config = ResFormerConfig(**fields, value_mode="resformer", value_learnable=True)
        model = ResFormerForCausalLM(config)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return Path(out)


def continuation_logprob(model, context: list[int], continuation: list[int]) -> float:
    """Summed log-probability of ``continuation`` after ``context``, from one forward pass."""
    import torch

    with torch.no_grad():
        logits = model(torch.tensor([context + continuation])).logits[0].float()
    logprobs = torch.log_softmax(logits[len(context) - 1 : -1], -1)
    return float(sum(logprobs[i, t] for i, t in enumerate(continuation)))


# --- grids ------------------------------------------------------------------------------------
def tiny_grid(base, doit_dir, sft_config, **keys) -> dict:
    """A grid of three cells on the base at ``base``: the untuned base (n = 0), n = 1, and n = 1
    without math (leave-one-out); two epochs, both scored. ``keys`` replace top-level keys."""
    grid = {
        "name": "tiny",
        "doit_dir": str(doit_dir),
        "bases": [{"name": "tiny", "arch": "llama", "params": 1000, "path": str(base)}],
        "data": {"per_ability": [1], "loo": {"values": [1], "abilities": ["math"]}},
        "seed": [0],
        "sft": {
            "config": str(sft_config),
            "overrides": {
                "num_train_epochs": 2,
                "min_steps": 0,
                "logging_steps": 1,
                "disable_tqdm": True,
            },
        },
        "max_new_tokens": GRID_BUDGETS,
        "eval_epochs": "all",
        "eval_batch_size": 8,
        "keep": "scored",
    }
    grid.update(keys)
    return grid


def write_grid(path, grid: dict) -> Path:
    path = Path(path)
    path.write_text(yaml.safe_dump(grid, sort_keys=False), encoding="utf-8")
    return path
