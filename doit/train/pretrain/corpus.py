"""The pretraining data path: documents -> packed blocks -> a fixed, seeded order per epoch.

Documents (one a line of a ``.txt`` file, or the ``text_field`` of each ``.jsonl`` record) are
tokenised without special tokens, each followed by EOS, concatenated and cut into
``block_size`` blocks (the tail is dropped); epoch ``e`` reads the training blocks in the
(e+1)-th permutation drawn from a generator seeded with ``data_seed`` (else ``seed``). Blocks are
plain causal windows: a document may attend to the one before it across its EOS.
"""

from __future__ import annotations

from pathlib import Path

import torch

from doit.io import read_jsonl
from doit.train.pretrain.args import PretrainArguments, resolve_paths

DATA_SUFFIXES = (".txt", ".jsonl", ".json")


def read_documents(path: Path, text_field: str = "text") -> list[str]:
    """Non-empty documents of a .txt (one a line) or .jsonl/.json (one record a line) file."""
    path = Path(path)
    if path.suffix not in DATA_SUFFIXES:
        raise ValueError(f"{path}: expected one of {DATA_SUFFIXES}, got {path.suffix!r}")
    if path.suffix == ".txt":
        return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    docs = []
    for n, record in read_jsonl(path):
        if not isinstance(record.get(text_field), str):
            raise ValueError(f"{path}:{n}: no string field {text_field!r} (set text_field)")
        docs.append(record[text_field])
    return docs


def pack_documents(docs: list[str], tokenizer, block_size: int) -> torch.Tensor:
    """(n_blocks, block_size) token ids: each document + EOS, concatenated, tail dropped."""
    eos = tokenizer.eos_token_id
    if eos is None:
        raise ValueError("the tokenizer has no eos_token; pretraining needs one between documents")
    ids = tokenizer(docs, add_special_tokens=False)["input_ids"]
    flat = torch.tensor([t for doc in ids for t in (*doc, eos)], dtype=torch.long)
    n_blocks = len(flat) // block_size
    if n_blocks == 0:
        raise ValueError(f"{len(flat)} tokens make no block of {block_size}; lower block_size")
    return flat[: n_blocks * block_size].view(n_blocks, block_size)


class EpochPermutation(torch.utils.data.Sampler[int]):
    """Indices ``0..n-1`` in an order fixed by ``(seed, epoch)``: the same for every model
    trained with ``seed``, a new one each epoch. Trainer calls `set_epoch` before each epoch
    (through accelerate's shard wrappers when there are several ranks), so a resumed run replays
    the interrupted epoch's order."""

    def __init__(self, n: int, seed: int):
        self.n, self.seed, self.epoch = n, seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        generator = torch.Generator().manual_seed(self.seed)
        for _ in range(self.epoch + 1):  # epoch e takes the (e+1)-th draw of one seeded stream
            order = torch.randperm(self.n, generator=generator)
        return iter(order.tolist())


class BlockDataset(torch.utils.data.Dataset):
    """Packed blocks as causal-LM examples (labels = input ids; the model shifts them)."""

    def __init__(self, blocks: torch.Tensor):
        self.blocks = blocks

    def __len__(self) -> int:
        return len(self.blocks)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.blocks[i], "labels": self.blocks[i]}


def unigram_baseline(train: torch.Tensor, valid: torch.Tensor, vocab_size: int) -> dict:
    """The loss a model ignoring context would reach, in nats per token: the entropy of the
    training tokens' unigram distribution, and the valid tokens' cross-entropy under it (add-one
    smoothed, so a token unseen in training costs a finite loss). A ladder run must beat both."""
    counts = torch.bincount(train.flatten(), minlength=vocab_size).double()
    p = counts[counts > 0] / counts.sum()
    smoothed = (counts + 1) / (counts.sum() + vocab_size)
    return {
        "unigram_entropy": float(-(p * p.log()).sum()),
        "unigram_valid_loss": float(-smoothed.log()[valid.flatten()].mean()),
    }


def load_corpus(args: PretrainArguments, tokenizer) -> dict[str, BlockDataset]:
    paths = resolve_paths(args)
    train = pack_documents(
        read_documents(paths["train"], args.text_field), tokenizer, args.block_size
    )
    valid = pack_documents(
        read_documents(paths["valid"], args.text_field), tokenizer, args.block_size
    )
    return {"train": BlockDataset(train), "valid": BlockDataset(valid)}
