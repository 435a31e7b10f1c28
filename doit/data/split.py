"""Deterministic stratified train/valid/test split, per ability, into the DoIT layout.

For each ability, items are ranked by a seeded hash of their identity (see
``doit.data.sampling``): the first ``n_test`` go to test, the next ``n_valid`` to
valid, the rest to train (``curated/full``), and a seeded 1,000-item sample of train
to ``curated/1000``. The same input gives the same split on any machine and in any
file order.
"""

from __future__ import annotations

from pathlib import Path

from doit.data import abilities as ab
from doit.data.io import atomic_output_dir, write_jsonl
from doit.data.layout import SPLIT_DIRS, all_record_files, is_record_file
from doit.data.load import read_files, require_clean
from doit.data.manifest import write_manifest
from doit.data.sampling import by_ability, ranked, take
from doit.data.schema import to_record

SUFFIX = {"full": "_full.json", "1000": "_1000.json", "valid": "_valid.json", "test": "_test.json"}


def input_files(path: Path) -> list[Path]:
    if is_record_file(path):
        return [path]
    files = all_record_files(path) or sorted(p for p in path.rglob("*") if is_record_file(p))
    if not files:
        raise FileNotFoundError(f"{path}: no .json/.jsonl record files")
    return files


def split_items(items: list[dict], n_valid: int, n_test: int, seed: int, pool: int = 1000) -> dict:
    """{split: items} with splits full, 1000, valid, test (per ability, seeded)."""
    out = {s: [] for s in SUFFIX}
    for key, group in sorted(by_ability(items).items()):
        order = ranked(group, seed, "split")
        if len(order) <= n_valid + n_test:
            raise ValueError(
                f"{key}: {len(order)} items, need more than valid+test = {n_valid + n_test}"
            )
        out["test"] += order[:n_test]
        out["valid"] += order[n_test : n_test + n_valid]
        train = order[n_test + n_valid :]
        out["full"] += train
        out["1000"] += take(train, min(pool, len(train)), seed, "pool")
    return out


def build_split(src, out, seed: int = 0, n_valid: int = 100, n_test: int = 100) -> dict:
    src, out = Path(src), Path(out)
    items, problems = read_files(input_files(src))
    require_clean(problems)
    items = [it for it in items if it["ability"] in ab.ABILITY_KEYS]
    parts = split_items(items, n_valid, n_test, seed)
    with atomic_output_dir(out) as tmp:
        for split, rows in parts.items():
            for key, group in sorted(by_ability(rows).items()):
                group = sorted(group, key=lambda it: it["idx"])
                write_jsonl(
                    tmp / SPLIT_DIRS[split] / f"{key}{SUFFIX[split]}", map(to_record, group)
                )
        args = {"input": str(src), "seed": seed, "valid": n_valid, "test": n_test}
        return write_manifest(tmp, kind="split", seed=seed, args=args, synthetic_data=False)
