"""Nested quantity subsets: n items per ability (the study's grid), or n synthetic items.

subset(n) is contained in subset(m) for n < m, per ability, and depends only on
(seed, ability, item identity) — see ``doit.data.sampling``. Each cell is a mix spec
(`doit.data.mixes.per_ability_spec`, `synthetic_spec`) drawn by `doit.data.mixes.draw`. Each cell is written
to ``OUT/nNNNN/`` (per ability) or ``OUT/sNNNNN/`` (synthetic totals) as a DoIT
directory. The study drew each quantity independently; doit's subsets are nested on
purpose, so that a curve's steps differ only by added data (the manifest says so).
"""

from __future__ import annotations

from pathlib import Path

from doit import __version__
from doit.data import abilities as ab
from doit.data.cells import cell_name, source_is_synthetic, write_cell
from doit.data.load import load_items
from doit.data.mixes import MixError, draw, per_ability_spec, synthetic_spec
from doit.io import MANIFEST, atomic_output_dir, check_output, write_json

KIND = "subsets"  # the manifest kind of a folder of subset cells

DEFAULT_PER_ABILITY = (1, 4, 16, 64, 256, 1000)
DEFAULT_SYNTHETIC_TOTALS = (10, 40, 160, 640, 2560, 10000, 40960)
NESTED_NOTE = (
    "subsets are nested (each cell contains the smaller ones) and drawn by a seeded "
    "hash of item identity; the study drew each quantity independently"
)


def build_subsets(
    source,
    out,
    sizes=DEFAULT_PER_ABILITY,
    pool: str = "1000",
    seed: int = 0,
    abilities=None,
    overwrite: bool = False,
) -> dict[str, dict]:
    """Write one cell per size under ``out``; returns {cell name: manifest}."""
    source, out = Path(source), Path(out)
    sizes = sorted(set(int(n) for n in sizes))
    _check_sizes(sizes, "per_ability")
    check_output(
        out, KIND, inputs={"the source": source}, overwrite=overwrite
    )  # before reading anything
    specs = {n: per_ability_spec(n, seed, pool, abilities) for n in sizes}
    pool_items = load_items(source, pool)  # read once for every size
    cells = {n: draw(spec, pool_items, [])[0] for n, spec in specs.items()}
    args = {
        "source": str(source),
        "per_ability": sizes,
        "pool": pool,
        "seed": seed,
        "abilities": list(ab.parse_keys(abilities)) if abilities else None,
    }
    return _write_cells(source, out, cells, args, seed, synthetic=False, overwrite=overwrite)


def build_synthetic_subsets(
    source, out, totals=DEFAULT_SYNTHETIC_TOTALS, seed: int = 0, overwrite: bool = False
) -> dict:
    source, out = Path(source), Path(out)
    totals = sorted(set(int(n) for n in totals))
    _check_sizes(totals, "totals")
    check_output(out, KIND, inputs={"the source": source}, overwrite=overwrite)
    synthetic = load_items(source, ab.SYNTHETIC)
    cells = {n: draw(synthetic_spec(n, seed), [], synthetic)[0] for n in totals}
    args = {"source": str(source), "synthetic": True, "totals": totals, "seed": seed}
    return _write_cells(source, out, cells, args, seed, synthetic=True, overwrite=overwrite)


def _check_sizes(sizes: list[int], key: str) -> None:
    if not sizes or sizes[0] < 1:
        raise MixError(f"--{key.replace('_', '-')}: every size must be >= 1, got {sizes}", key)


def _write_cells(
    source: Path,
    out: Path,
    cells: dict[int, list[dict]],
    args: dict,
    seed: int,
    synthetic: bool,
    overwrite: bool = False,
) -> dict[str, dict]:
    manifests = {}
    with atomic_output_dir(out, kind=KIND, overwrite=overwrite, sources=[source]) as tmp:
        for n, items in cells.items():
            name = cell_name(n, synthetic)
            (tmp / name).mkdir()
            manifests[name] = write_cell(
                tmp / name,
                items,
                source,
                kind="subset",
                seed=seed,
                args={**args, "cell": n},
                notes=[NESTED_NOTE],
                synthetic_data=source_is_synthetic(source),
            )
        write_json(
            tmp / MANIFEST,
            {"doit_version": __version__, "kind": KIND, "args": args, "cells": sorted(manifests)},
        )
    return manifests
