"""Training data for the SFT recipe: draw items with doit.data, tokenise once, cache on disk.

This module is the only place that tokenises training data. Items come from doit.data, never
re-sampled here: a cell directory (``subset_dir``), or a mix spec drawn by
`doit.data.mixes.sample_mix`: a mix YAML, or the spec of n items per ability
(`per_ability_spec`, the subset cell ``nNNNN``; ``exclude_abilities`` for leave-one-out cells)
with or without n synthetic items (`synthetic_spec`), exactly as `doit data subset` draws them.

Items are rendered in the run's ``formulation`` first (``doit.data.kinds.formulate``: under
``text`` a multiple-choice item's target is the gold option's text, the very string prediction
ranks). Each conversation is rendered by the tokenizer's chat template (`doit.models.chat`), cut to its
first ``max_length`` tokens, and given ``labels``: its token ids where the template's
``{% generation %}`` mask marks assistant tokens (the assistant's ``<eot>`` included), -100
elsewhere. Items left with no trainable token are dropped and counted.

Cache: ``$DOIT_CACHE/tok/<key>/`` (default ``~/.cache/doit``), where ``key`` is the sha256 of
the items' content, the tokenizer (its ``tokenizer.json`` content), the template, ``max_length``
and the loss mask. A build goes to a temporary folder renamed into place, so concurrent ranks
and killed runs never leave a half-written entry.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import datasets

from doit.data import abilities as ab
from doit.data import kinds as ak
from doit.data.load import load_items
from doit.io import read_json
from doit.train.errors import ConfigError

log = logging.getLogger("doit.train")
CACHE_VERSION = 1
COLUMNS = ("input_ids", "labels")
FEATURES = datasets.Features(
    {
        "input_ids": datasets.List(datasets.Value("int32")),
        "labels": datasets.List(datasets.Value("int32")),
        "ability": datasets.Value("string"),
    }
)


@dataclass
class TrainData:
    train: datasets.Dataset
    valid: dict[str, datasets.Dataset]  # ability -> tokenised valid items
    info: dict = field(default_factory=dict)  # provenance for run_info.json


def cache_root() -> Path:
    return Path(os.environ.get("DOIT_CACHE") or Path.home() / ".cache" / "doit") / "tok"


# -- which items -----------------------------------------------------------------------------


def source_root(d) -> Path:
    return Path(d.subset_dir or d.doit_dir)


def draw_spec(d):
    """The `doit.data.mixes.MixSpec` a `DoitDataArguments` without ``subset_dir`` draws."""
    from doit.data.mixes import load_mix, per_ability_spec, synthetic_spec

    if d.mix:
        return load_mix(d.mix)
    if d.per_ability:
        spec = per_ability_spec(
            d.per_ability, d.sample_seed, str(d.pool), exclude=d.exclude_abilities or ()
        )
        spec.synthetic = d.synthetic or 0
        return spec
    return synthetic_spec(d.synthetic, d.sample_seed)


def train_items(d) -> list[dict]:
    """The training items named by a `DoitDataArguments`, drawn by doit.data, in its
    formulation."""
    return formulated(_drawn(d), d.formulation)


def formulated(items: list[dict], formulation: str) -> list[dict]:
    """``items`` in ``formulation`` (`doit.data.kinds.formulate`); an item it cannot ask
    so is a ConfigError on ``formulation`` naming the item's file and line."""
    try:
        return [ak.formulate(it, formulation) for it in items]
    except ValueError as e:
        raise ConfigError("formulation", str(e)) from None


def _drawn(d) -> list[dict]:
    if d.subset_dir:
        return load_items(d.subset_dir, "train")
    from doit.data.mixes import MixError, sample_mix

    try:
        return sample_mix(draw_spec(d), Path(d.doit_dir), stage=d.stage)
    except MixError as e:  # more items than a pool holds
        raise ConfigError(e.key or "mix", str(e)) from None


def check_draw(d, sizes) -> None:
    """The pool checks of `train_items` without drawing (the study plan makes them for every
    cell): ConfigError when ``d`` asks more items than its pools hold. ``sizes(pool)``: the
    pool's {ability: items} ("1000", "full" or "synthetic")."""
    if d.subset_dir:
        return
    from doit.data.mixes import MixError, resolve_counts

    try:
        spec = draw_spec(d)
        for one in spec.drawing:  # a staged mix: every stage
            if one.counts or one.fill:
                resolve_counts(one, sizes(one.source))
            have = sum(sizes(ab.SYNTHETIC).values()) if one.synthetic else 0
            if one.synthetic > have:
                key = "mix" if d.mix else "synthetic"
                raise ConfigError(
                    key, f"{one.synthetic} exceeds the synthetic pool of {have} items"
                )
    except MixError as e:
        raise ConfigError(e.key or "mix", str(e)) from None


def valid_items(d) -> list[dict]:
    return formulated(load_items(source_root(d), "valid", ood=False), d.formulation)


def items_sha256(items: list[dict]) -> str:
    h = hashlib.sha256()
    for it in items:
        h.update(json.dumps([it["ability"], it["messages"]], ensure_ascii=False).encode())
        h.update(b"\n")
    return h.hexdigest()


# -- tokenising ------------------------------------------------------------------------------


def training_template(tokenizer) -> str:
    """The template that renders training data: the tokenizer's own when it marks assistant
    turns with ``{% generation %}``, else TRL's training variant of a known template."""
    from trl.chat_template_utils import get_training_chat_template, has_generation_markers

    if has_generation_markers(tokenizer.chat_template):
        return tokenizer.chat_template
    patched = get_training_chat_template(tokenizer)
    if patched is None:
        raise ValueError("chat_template: has no {% generation %} markers and TRL has no patch")
    return patched


def encode(messages: list[dict], tokenizer, template: str, max_length: int, assistant_only: bool):
    """(input_ids, labels) of one conversation; labels are -100 outside the loss mask."""
    enc = tokenizer.apply_chat_template(
        messages,
        chat_template=template,
        return_dict=True,
        return_assistant_tokens_mask=assistant_only,
    )
    ids = list(enc["input_ids"])[:max_length]
    mask = list(enc["assistant_masks"])[:max_length] if assistant_only else [1] * len(ids)
    return ids, [t if m else -100 for t, m in zip(ids, mask, strict=True)]


def tokenise(items: list[dict], tokenizer, template: str, max_length: int, assistant_only: bool):
    """A `datasets.Dataset` with input_ids, labels, ability; items with no target dropped."""
    rows = {"input_ids": [], "labels": [], "ability": []}
    for it in items:
        ids, labels = encode(it["messages"], tokenizer, template, max_length, assistant_only)
        if any(t != -100 for t in labels):
            rows["input_ids"].append(ids)
            rows["labels"].append(labels)
            rows["ability"].append(it["ability"])
    return datasets.Dataset.from_dict(rows, features=FEATURES), len(items) - len(rows["ability"])


def tokenizer_sha256(tokenizer, template: str) -> str:
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise ValueError("tokenizer: a fast (tokenizers-backed) tokenizer is needed for masks")
    h = hashlib.sha256(backend.to_str().encode())
    h.update(template.encode())
    h.update(json.dumps(tokenizer.special_tokens_map, sort_keys=True).encode())
    return h.hexdigest()


# -- cache -----------------------------------------------------------------------------------


def cache_key(
    train: list[dict],
    valid: list[dict],
    tokenizer,
    template: str,
    max_length: int,
    assistant_only: bool,
) -> str:
    parts = {
        "version": CACHE_VERSION,
        "train": items_sha256(train),
        "valid": items_sha256(valid),
        "tokenizer": tokenizer_sha256(tokenizer, template),
        "max_length": max_length,
        "assistant_only_loss": assistant_only,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def build_entry(path: Path, train, valid, tokenizer, template, max_length, assistant_only) -> None:
    """Tokenise into a temp folder next to ``path`` and rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-", dir=path.parent))
    try:
        stats = {}
        for split, items in (("train", train), ("valid", valid)):
            ds, dropped = tokenise(items, tokenizer, template, max_length, assistant_only)
            # datasets cannot load an empty dataset saved as 0 shards
            ds.save_to_disk(str(tmp / split), num_shards=1 if len(ds) == 0 else None)
            stats[split] = {"items": len(items), "kept": len(ds), "dropped_no_target": dropped}
        (tmp / "stats.json").write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        if not (path / "stats.json").is_file():  # lost a race only if the winner is complete
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def load_or_build(train, valid, tokenizer, template, max_length, assistant_only, main_first):
    """The cached tokenised splits, built on a miss; ``main_first`` orders the ranks."""
    key = cache_key(train, valid, tokenizer, template, max_length, assistant_only)
    path = cache_root() / key
    with main_first:
        if (path / "stats.json").is_file():
            log.info("tokenised-cache hit: %s", path)
        else:
            log.info(
                "tokenised-cache miss: tokenising %d items into %s", len(train) + len(valid), path
            )
            build_entry(path, train, valid, tokenizer, template, max_length, assistant_only)
    stats = read_json(path / "stats.json")
    splits = {s: datasets.load_from_disk(str(path / s)) for s in ("train", "valid")}
    return splits, {"cache_dir": str(path), "cache_key": key, "tokenised": stats}


def by_ability(ds: datasets.Dataset) -> dict[str, datasets.Dataset]:
    abilities = ds["ability"]
    keys = [k for k in ab.ABILITY_KEYS if k in set(abilities)]
    return {k: ds.select([i for i, a in enumerate(abilities) if a == k]) for k in keys}


def pack(ds: datasets.Dataset, max_length: int) -> datasets.Dataset:
    """TRL's best-fit-decreasing packing (padding-free; needs FlashAttention)."""
    from trl import pack_dataset

    cols = ds.select_columns(list(COLUMNS))
    return pack_dataset(cols, max_length, "bfd", {"keep_in_memory": True})


def build(args, tokenizer) -> TrainData:
    """Everything the trainer needs from the data, plus its provenance."""
    d, t = args.data, args.training
    train, valid = train_items(d), valid_items(d)
    if not train:
        raise ConfigError("data", "the selection holds no training items")
    if not valid and t.eval_strategy != "no":
        raise ConfigError("eval_strategy", f"{source_root(d)} has no valid split; set it to no")
    template = training_template(tokenizer)
    main_first = t.main_process_first(local=True, desc="tokenising")
    splits, info = load_or_build(
        train, valid, tokenizer, template, t.max_length, t.assistant_only_loss, main_first
    )
    train_ds = pack(splits["train"], t.max_length) if t.packing else splits["train"]
    info.update(
        source=str(source_root(d)),
        train_items_sha256=items_sha256(train),
        train_counts=_counts(train),
        assistant_tokens=assistant_tokens(splits["train"]),
        valid_counts=_counts(valid),
        train_sequences=len(train_ds),
    )
    return TrainData(train_ds.select_columns(_keep(train_ds)), by_ability(splits["valid"]), info)


def assistant_tokens(ds: datasets.Dataset) -> dict[str, int]:
    """Trained (assistant) tokens per ability in one pass over ``ds``."""
    out: dict[str, int] = {}
    for ability, labels in zip(ds["ability"], ds["labels"]):
        out[ability] = out.get(ability, 0) + sum(1 for x in labels if x != -100)
    return dict(sorted(out.items()))


def _keep(ds: datasets.Dataset) -> list[str]:
    return [c for c in ds.column_names if c in (*COLUMNS, "seq_lengths")]


def _counts(items: list[dict]) -> dict[str, int]:
    out: dict[str, int] = {}
    for it in items:
        out[it["ability"]] = out.get(it["ability"], 0) + 1
    return dict(sorted(out.items()))
