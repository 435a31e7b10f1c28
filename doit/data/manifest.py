"""``manifest.json``: what a dataset directory holds, written once by whoever wrote it.

Schema (all keys always present):
``doit_version``; ``kind`` (download, micro, subset, mix, split, curate);
``synthetic_data`` (true for doit-generated corpora); ``seed``; ``args`` (the
command's arguments); ``counts`` {split: {ability: records}} where split is a
folder name under ``curated/`` (1000, full, train, valid, test) or ``synthetic``;
``files`` {relative path: {sha256, records}}; ``notes`` [str]; plus any ``extra``
keys the writer adds (e.g. ``revision`` for a download). No timestamps, so that the
same inputs give byte-identical manifests.

A folder of subset cells (``doit data subset --out OUT``) carries a lighter one at ``OUT/``:
``{doit_version, kind: "subsets", args, cells}`` (each cell its own full manifest). The kind
is how an output folder is recognised: a writer replaces an existing ``--out`` only when it
is a doit output of its own kind (`doit.io.atomic_output_dir`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from doit import __version__
from doit.data.layout import ability_from_name, all_record_files, count_records
from doit.io import MANIFEST, sha256_file, write_json


def describe(root: Path) -> tuple[dict, dict]:
    """(counts per split and ability, files with sha256 and record counts)."""
    counts: dict[str, dict[str, int]] = {}
    files: dict[str, dict[str, Any]] = {}
    for f in all_record_files(root):
        rel = f.relative_to(root).as_posix()
        n = count_records(f)
        split = "synthetic" if rel.startswith("synthetic/") else f.parent.name
        key = ability_from_name(f) or f.stem
        counts.setdefault(split, {})[key] = counts.get(split, {}).get(key, 0) + n
        digest = sha256_file(f) if f.is_file() else "hf-dataset-dir"
        files[rel] = {"sha256": digest, "records": n}
    return counts, files


def write_manifest(
    root,
    *,
    kind: str,
    seed: int | None,
    args: dict,
    synthetic_data: bool,
    notes: list[str] | None = None,
    **extra: Any,
) -> dict:
    root = Path(root)
    counts, files = describe(root)
    manifest = {
        "doit_version": __version__,
        "kind": kind,
        "synthetic_data": synthetic_data,
        "seed": seed,
        "args": args,
        "counts": counts,
        "files": files,
        "notes": list(notes or []),
        **extra,
    }
    write_json(root / MANIFEST, manifest)
    return manifest


def data_hash(root) -> str:
    """sha256 over the record files' hashes: identifies a dataset directory's content."""
    _, files = describe(Path(root))
    h = hashlib.sha256()
    for rel in sorted(files):
        h.update(f"{rel}\0{files[rel]['sha256']}\n".encode())
    return h.hexdigest()
