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

from doit.data import abilities as ab
from doit.data.cells import cell_name, source_is_synthetic, write_cell
from doit.data.load import load_items
from doit.data.mixes import draw, per_ability_spec, synthetic_spec
from doit.io import atomic_output_dir

DEFAULT_PER_ABILITY = (1, 4, 16, 64, 256, 1000)
DEFAULT_SYNTHETIC_TOTALS = (10, 40, 160, 640, 2560, 10000, 40960)
NESTED_NOTE = (
    "subsets are nested (each cell contains the smaller ones) and drawn by a seeded "
    "hash of item identity; the study drew each quantity independently"
)


def build_subsets(
    source, out, sizes=DEFAULT_PER_ABILITY, pool: str = "1000", seed: int = 0, abilities=None
) -> dict[str, dict]:
    """Write one cell per size under ``out``; returns {cell name: manifest}."""
    source, out = Path(source), Path(out)
    sizes = sorted(set(int(n) for n in sizes))
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
    return _write_cells(source, out, cells, args, seed, synthetic=False)


def build_synthetic_subsets(source, out, totals=DEFAULT_SYNTHETIC_TOTALS, seed: int = 0) -> dict:
    source, out = Path(source), Path(out)
    totals = sorted(set(int(n) for n in totals))
    synthetic = load_items(source, ab.SYNTHETIC)
    cells = {n: draw(synthetic_spec(n, seed), [], synthetic)[0] for n in totals}
    args = {"source": str(source), "synthetic": True, "totals": totals, "seed": seed}
    return _write_cells(source, out, cells, args, seed, synthetic=True)


def _write_cells(
    source: Path, out: Path, cells: dict[int, list[dict]], args: dict, seed: int, synthetic: bool
) -> dict[str, dict]:
    manifests = {}
    with atomic_output_dir(out) as tmp:
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
    return manifests
