"""Loading DoIT files into validated items and ``datasets`` objects.

``load_split`` / ``load_doit`` return ``datasets.Dataset`` / ``DatasetDict`` with the
fixed schema ``ITEM_FEATURES`` (fields documented in ``doit.data.schema``). Loading
raises ``DataError`` listing every error of every file; warnings are returned by
``read_items`` and printed by ``validate``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datasets

from doit.data import abilities as ab
from doit.data.layout import (
    SYNTHETIC_DIR,
    ability_from_name,
    read_records,
    split_dir,
    split_files,
    synthetic_files,
)
from doit.data.schema import ERROR, DataError, Problem, parse_record

ITEM_FEATURES = datasets.Features(
    {
        "uid": datasets.Value("string"),
        "ability": datasets.Value("string"),
        "type": datasets.Value("string"),
        "idx": datasets.Value("int64"),
        "question_format": datasets.Value("int8"),
        "messages": datasets.List(
            {"role": datasets.Value("string"), "content": datasets.Value("string")}
        ),
        "choices": datasets.List(datasets.Value("string")),
        "answer": datasets.Value("string"),
        "answer_kind": datasets.Value("string"),
        "options": datasets.List(datasets.Value("string")),
        "gold": datasets.Value("string"),
        "chance": datasets.Value("float64"),
        "source": datasets.Value("string"),
        "line": datasets.Value("int64"),
        "cluster": datasets.Value("string"),  # optional (None): items resting on one fact
    }
)


def read_items(path: Path, label: str | None = None) -> tuple[list[dict[str, Any]], list[Problem]]:
    """Validate every record of one file. Returns (items, problems); items exclude
    records with errors. ``label`` is how the file is named in problems."""
    label = label or str(path)
    hint = ability_from_name(path)
    items, problems, seen = [], [], {}
    for position, (line, rec) in enumerate(read_records(path)):
        if isinstance(rec, Problem):
            problems.append(rec)
            continue
        item, found = parse_record(rec, path=label, line=line, hint=hint, position=position)
        problems += found
        if item is None:
            continue
        first = seen.setdefault((item["ability"], item["idx"]), line)
        if first != line:
            problems.append(
                Problem(label, line, "idx", f"duplicate idx {item['idx']} (first at line {first})")
            )
            continue
        items.append(item)
    return items, problems


def read_files(files: list[Path]) -> tuple[list[dict], list[Problem]]:
    items, problems = [], []
    for f in files:
        got, found = read_items(f)
        items += got
        problems += found
    return items, problems


def to_dataset(items: list[dict[str, Any]]) -> datasets.Dataset:
    cols = {
        name: [it.get(name) if name == "cluster" else it[name] for it in items]
        for name in ITEM_FEATURES
    }
    return datasets.Dataset.from_dict(cols, features=ITEM_FEATURES)


def require_clean(problems: list[Problem]) -> None:
    """Raise ``DataError`` listing every error among ``problems`` (warnings pass)."""
    errors = [p for p in problems if p.level == ERROR]
    if errors:
        raise DataError(errors)


def load_items(
    root: str | Path, split: str, pool: str = "1000", abilities=None, ood: bool = True
) -> list[dict]:
    """Validated items of ``split`` ('train', 'valid', 'test', '1000', 'full', 'synthetic')
    as plain dicts, in file-name then line order. Raises DataError on any error, and when the
    split holds no items (of ``abilities``)."""
    root = Path(root)
    files = synthetic_files(root) if split == ab.SYNTHETIC else split_files(root, split, pool)
    keys = set(ab.parse_keys(abilities)) if abilities else None
    chosen = [f for f in files if _wanted(ability_from_name(f), keys, ood)]
    items, problems = read_files(chosen)
    require_clean(problems)
    items = [it for it in items if _wanted(it["ability"], keys, ood)]
    if not items:
        where = split_dir(root, split, pool) if split != ab.SYNTHETIC else root / SYNTHETIC_DIR
        which = f" of {', '.join(sorted(keys))}" if keys else ""
        raise DataError(
            [
                Problem(
                    str(where),
                    0,
                    "split",
                    f"no items{which} of split {split!r} ({len(chosen)} record files read)",
                )
            ]
        )
    return items


def _wanted(key: str | None, keys: set[str] | None, ood: bool) -> bool:
    if key in ab.OOD_KEYS and not ood:
        return False
    return keys is None or key is None or key in keys


def load_split(
    root, split: str, pool: str = "1000", abilities=None, ood: bool = True
) -> datasets.Dataset:
    return to_dataset(load_items(root, split, pool, abilities, ood))


def load_doit(root, pool: str = "1000", abilities=None, ood: bool = True) -> datasets.DatasetDict:
    """train (``curated/train`` if present, else ``curated/<pool>``), valid and test."""
    return datasets.DatasetDict(
        {s: load_split(root, s, pool, abilities, ood) for s in ("train", "valid", "test")}
    )
