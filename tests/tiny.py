"""The tests' fixture corpus (a small DoIT download) bound into doit.testing's builders."""

from __future__ import annotations

from pathlib import Path

from doit.testing import byte_bpe, corpus_texts, file_texts, metaspace_bpe, save_tiny_base

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "doit_download"
BASE_VOCAB = 384

# Pretraining-recipe overrides for a base built in two steps (grid and demo tests)
TINY_PRETRAIN = {
    "block_size": 32,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_attention_heads": 2,
    "max_steps": 2,
    "per_device_train_batch_size": 4,
    "logging_steps": 1,
}


def byte_bpe_tokenizer(vocab_size: int = 400):
    """Byte-level BPE on the fixture's messages and choices, with the speaker template."""
    return byte_bpe(corpus_texts(FIXTURE), vocab_size, chat=True)


def metaspace_tokenizer(vocab_size: int = 400):
    """LLaMA-style Metaspace BPE on the fixture's messages and choices, with the template."""
    return metaspace_bpe(corpus_texts(FIXTURE), vocab_size)


def train_tokenizer(extra_text: list[str] = ()):
    """A base's tokenizer: byte-level BPE on the fixture files' raw text (no speaker tokens:
    the recipe must add them)."""
    return byte_bpe([*file_texts(FIXTURE), *extra_text], BASE_VOCAB)


def make_base(out: Path, arch: str = "llama", hidden: int = 32, seed: int = 0) -> Path:
    """A tiny base folder: ``train_tokenizer()`` and a random 2-layer Llama or ResFormer."""
    return save_tiny_base(out, train_tokenizer(), arch=arch, hidden=hidden, seed=seed)
