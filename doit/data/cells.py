"""Writing a training *cell*: a DoIT-layout directory that the rest of doit accepts.

A cell holds ``curated/train/<ability>.jsonl`` (its training items),
``curated/valid`` and ``curated/test`` copied unchanged from the source, and a
``manifest.json``. Subsets, mixes and splits all write cells through ``write_cell``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from doit.data import abilities as ab
from doit.data.layout import SPLIT_DIRS, split_dir
from doit.data.manifest import write_manifest
from doit.data.sampling import by_ability, identity
from doit.data.schema import to_record
from doit.io import read_json, write_jsonl


def cell_name(n: int, synthetic: bool = False) -> str:
    """``nNNNN`` (n items per ability) or ``sNNNNN`` (n synthetic items)."""
    return f"s{n:05d}" if synthetic else f"n{n:04d}"


def write_train(root: Path, items: list[dict[str, Any]]) -> None:
    groups = by_ability(items)
    for key in sorted(groups):
        rows = sorted(groups[key], key=identity)
        write_jsonl(root / SPLIT_DIRS["train"] / f"{key}.jsonl", (to_record(it) for it in rows))


def copy_eval_splits(source: Path, root: Path) -> None:
    for split in ("valid", "test"):
        src = split_dir(source, split)
        if src.is_dir():
            shutil.copytree(src, root / SPLIT_DIRS[split], ignore=shutil.ignore_patterns(".*"))


def write_cell(
    root: Path,
    items: list[dict[str, Any]],
    source: Path,
    *,
    kind: str,
    seed: int,
    args: dict,
    notes: list[str],
    synthetic_data: bool,
    **extra: Any,
) -> dict:
    """Fill ``root`` (a fresh directory) with a cell and return its manifest."""
    write_train(root, items)
    copy_eval_splits(source, root)
    counts = {k: len(v) for k, v in sorted(by_ability(items).items())}
    return write_manifest(
        root,
        kind=kind,
        seed=seed,
        args=args,
        notes=notes,
        synthetic_data=synthetic_data,
        train_counts=counts,
        source=str(source),
        **extra,
    )


def source_is_synthetic(source: Path) -> bool:
    """True when ``source``'s manifest says doit generated it (the micro corpus)."""

    m = source / "manifest.json"
    return bool(m.is_file() and read_json(m).get("synthetic_data"))


def pool_sizes(items: list[dict[str, Any]]) -> dict[str, int]:
    sizes = {k: 0 for k in ab.ABILITY_KEYS}
    for it in items:
        sizes[it["ability"]] = sizes.get(it["ability"], 0) + 1
    return sizes
