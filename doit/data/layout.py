"""The DoIT download layout: where each split lives and how its files are read.

```
curated/1000/<ability>_1000.json     train pool used by the study (1,000 per ability)
curated/full/<ability>_full.json     every train item
curated/train/<ability>.jsonl        train cell written by doit (subsets, mixes, splits)
curated/valid/<ability>_valid.json   100 per ability
curated/test/<ability>_test.json     100 per ability, plus ceval_<subject>.json (40 each)
synthetic/40960/*.json               GPT-4 general instructions (messages only)
```
Files named ``.json`` are JSON Lines; JSON arrays and HF ``datasets`` saved with
``save_to_disk`` (a folder holding ``dataset_info.json``) are accepted too. For a
JSON array, a problem's "line" is the record's 1-based position in the array.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from doit.data import abilities as ab
from doit.data.schema import Problem
from doit.io import EncodingError, JsonError, read_jsonl, read_text

TRAIN_POOLS = ("1000", "full")
SPLITS = ("train", "valid", "test")
SPLIT_DIRS = {
    "1000": "curated/1000",
    "full": "curated/full",
    "train": "curated/train",
    "valid": "curated/valid",
    "test": "curated/test",
}
SYNTHETIC_DIR = "synthetic/40960"
_SUFFIXES = ("_1000", "_full", "_valid", "_test", "_train")
_EXTENSIONS = (".json", ".jsonl")


def is_hf_dataset_dir(path: Path) -> bool:
    return path.is_dir() and (path / "dataset_info.json").exists()


def is_record_file(path: Path) -> bool:
    return (path.is_file() and path.suffix in _EXTENSIONS) or is_hf_dataset_dir(path)


def ability_from_name(path: Path) -> str | None:
    """The ability a file holds, from its name (``role-play_test.json`` -> ``role_play``)."""
    stem = path.name
    for ext in _EXTENSIONS:
        stem = stem.removesuffix(ext)
    for suffix in _SUFFIXES:
        stem = stem.removesuffix(suffix)
    if path.parent.name == Path(SYNTHETIC_DIR).name or stem == ab.SYNTHETIC:
        return ab.SYNTHETIC
    return ab.canonical_key(stem)


def read_records(path: Path) -> Iterator[tuple[int, Any]]:
    """Yield (line, record) for every record in ``path``; a record that cannot be
    parsed is yielded as a ``Problem`` instead, so that all problems get reported."""
    if is_hf_dataset_dir(path):
        import datasets

        for i, row in enumerate(datasets.load_from_disk(str(path))):
            yield i + 1, row
        return
    try:
        text = read_text(path)
    except EncodingError as e:
        yield e.line, Problem(str(path), e.line, "encoding", f"not UTF-8 text: {e.msg}")
        return
    if text.lstrip().startswith("["):
        yield from _read_json_array(path, text)
        return
    for lineno, rec in read_jsonl(path, on_error="yield"):
        if isinstance(rec, JsonError):
            rec = Problem(str(path), lineno, "json", f"invalid JSON: {rec.msg}")
        yield lineno, rec


def count_records(path: Path) -> int:
    """How many records ``path`` holds (unparsable lines count: they are records gone bad)."""
    return sum(1 for _ in read_records(path))


def _read_json_array(path: Path, text: str) -> Iterator[tuple[int, Any]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        yield (
            e.lineno,
            Problem(str(path), e.lineno, "json", f"invalid JSON array: {e.msg} (column {e.colno})"),
        )
        return
    for i, rec in enumerate(data):
        yield i + 1, rec


def split_dir(root: Path, split: str, pool: str = "1000") -> Path:
    """Folder of ``split`` under ``root``; ``train`` is ``curated/train`` when a doit cell
    wrote one, else the study's pool ``curated/<pool>``."""
    if split == "train":
        cell = root / SPLIT_DIRS["train"]
        return cell if cell.is_dir() else root / SPLIT_DIRS[pool]
    if split in TRAIN_POOLS:
        return root / SPLIT_DIRS[split]
    if split not in SPLIT_DIRS:
        raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLIT_DIRS)}")
    return root / SPLIT_DIRS[split]


def split_files(root: Path, split: str, pool: str = "1000") -> list[Path]:
    """Record files of ``split``, sorted by name (never file-system order)."""
    folder = split_dir(root, split, pool)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if is_record_file(p) and not p.name.startswith("."))


def missing_abilities(root: Path) -> dict[str, list[str]]:
    """{split folder: the in-domain abilities it holds no file for}, for every split folder
    under ``root/curated/`` that exists."""
    out = {}
    for rel in SPLIT_DIRS.values():
        folder = root / rel
        if folder.is_dir():
            have = {ability_from_name(p) for p in folder.iterdir() if is_record_file(p)}
            lacking = [k for k in ab.ABILITY_KEYS if k not in have]
            if lacking:
                out[rel] = lacking
    return out


def synthetic_files(root: Path) -> list[Path]:
    folder = root / SYNTHETIC_DIR
    return sorted(p for p in folder.iterdir() if is_record_file(p)) if folder.is_dir() else []


def all_record_files(root: Path) -> list[Path]:
    """Every record file of a DoIT directory (all pools and splits, synthetic too)."""
    files = []
    for rel in (*SPLIT_DIRS.values(), SYNTHETIC_DIR):
        folder = root / rel
        if folder.is_dir():
            files += sorted(
                p for p in folder.iterdir() if is_record_file(p) and not p.name.startswith(".")
            )
    return files
