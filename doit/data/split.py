"""Deterministic stratified train/valid/test split, per ability, into the DoIT layout.

For each ability, items are ranked by a seeded hash of their identity (see
``doit.data.sampling``): the first ``n_test`` go to test, the next ``n_valid`` to
valid, the rest to train (``curated/full``), and a seeded 1,000-item sample of train
to ``curated/1000``. The same input gives the same split on any machine and in any
file order.

The input may hold the same records more than once (``curated/1000`` is a subset of
``curated/full``): a record is kept once per (ability, idx) (synthetic records: per
content hash, ``uid``) and the identical copies are counted in the manifest
(``duplicates``); the same (ability, idx) with different content is an error naming
both files and lines. C-Eval test sets (OOD) and synthetic
records are not split: they are carried through to ``curated/test/<subject>.json``
and ``synthetic/40960/<file>`` (listed in the manifest under ``carried``).
"""

from __future__ import annotations

from pathlib import Path

from doit.data import abilities as ab
from doit.data.layout import SPLIT_DIRS, SYNTHETIC_DIR, all_record_files, is_record_file
from doit.data.load import read_files, require_clean
from doit.data.manifest import write_manifest
from doit.data.sampling import by_ability, identity, ranked, take
from doit.data.schema import Problem, to_record
from doit.io import atomic_output_dir, write_jsonl

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
    if min(n_valid, n_test) < 0:
        raise ValueError(f"valid and test sizes must be >= 0, not {n_valid} and {n_test}")
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


def dedup(items: list[dict]) -> tuple[list[dict], dict[str, int], list[Problem]]:
    """Each record once per identity (``doit.data.sampling.identity``): returns the kept
    items, the identical copies dropped per ability, and an error for every record whose
    identity is taken by a different record (naming both files and lines)."""
    first: dict[tuple, dict] = {}
    kept, dropped, problems = [], {}, []
    for it in items:
        prev = first.setdefault(identity(it), it)
        if prev is it:
            kept.append(it)
        elif to_record(prev) == to_record(it):
            dropped[it["ability"]] = dropped.get(it["ability"], 0) + 1
        else:
            where = f"{prev['source']}:{prev['line']}"
            problems.append(
                Problem(
                    it["source"],
                    it["line"],
                    "idx",
                    f"{it['ability']} idx {it['idx']} is a different record at {where}",
                )
            )
    return kept, dict(sorted(dropped.items())), problems


def carried_path(item: dict) -> str:
    """Where an OOD or synthetic record goes in the output (they are not split)."""
    if item["ability"] in ab.OOD_KEYS:
        return f"{SPLIT_DIRS['test']}/{item['ability']}.json"
    return f"{SYNTHETIC_DIR}/{Path(item['source']).stem}.json"


def build_split(
    src, out, seed: int = 0, n_valid: int = 100, n_test: int = 100, overwrite: bool = False
) -> dict:
    src, out = Path(src), Path(out)
    with atomic_output_dir(out, kind="split", overwrite=overwrite, sources=[src]) as tmp:
        return _write_split(src, tmp, seed, n_valid, n_test)


def _write_split(src: Path, tmp: Path, seed: int, n_valid: int, n_test: int) -> dict:
    """Read, deduplicate and split ``src`` into the fresh folder ``tmp``; its manifest."""
    items, problems = read_files(input_files(src))
    require_clean(problems)
    items, dropped, conflicts = dedup(items)
    require_clean(conflicts)
    parts = split_items(
        [it for it in items if it["ability"] in ab.ABILITY_KEYS], n_valid, n_test, seed
    )
    carried: dict[str, list[dict]] = {}
    for it in items:
        if it["ability"] not in ab.ABILITY_KEYS:
            carried.setdefault(carried_path(it), []).append(it)
    for split, rows in parts.items():
        for key, group in sorted(by_ability(rows).items()):
            group = sorted(group, key=lambda it: it["idx"])
            write_jsonl(tmp / SPLIT_DIRS[split] / f"{key}{SUFFIX[split]}", map(to_record, group))
    for rel, group in carried.items():
        write_jsonl(tmp / rel, map(to_record, group))
    args = {"input": str(src), "seed": seed, "valid": n_valid, "test": n_test}
    duplicates = {
        "identical_records_kept_once": sum(dropped.values()),
        "by_ability": dropped,
    }
    return write_manifest(
        tmp,
        kind="split",
        seed=seed,
        args=args,
        synthetic_data=False,
        duplicates=duplicates,
        carried=sorted(carried),
    )
