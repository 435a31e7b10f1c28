"""Train mix files on one base of a planned study, with that study's recipe: a study of its own.

`train_mixes` writes ``WHERE/grid.yaml`` (`mix_grid`: the source study's grid, every key it has
but its name, bases and data axes, seeds and sweep, the formulation's included, with one base
and one ``data.mix`` cell per mix file for the training seeds, data seed 0), plans it into
``WHERE/study`` and runs its mix cells (a rerun resumes, keeping finished cells; the n = 0
cells every plan holds are left unrun). One mix may be ``reusable``: when every ability gets
the same n, the source's n-per-ability cells of that n (curated, no ability left out, the mix's
pool, data seed 0, on the base) hold the draw the mix would make, and when such a cell is
finished for every seed (`reusable_cells`) they stand for it and it is not trained.

Grid paths are relative to the current directory, as for the source study itself: train from
where it was planned.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from doit.grid import results
from doit.grid.plan import PLAN, read_plan, write_plan
from doit.grid.runner import run_study
from doit.grid.spec import load_grid
from doit.io import atomic_write_text

DROP = ("name", "bases", "data", "seed", "sample_seed", "sweep", "pretrain_seed")
STUDY = "study"  # the planned study's folder inside WHERE
MIX_CELLS = "*-mix_*"  # the mix cells' ids (`doit.grid.plan`): what is run


class MixStudyError(ValueError):
    """Mixes that cannot be trained as asked; the message names the study or the base."""


@dataclass(frozen=True)
class Reusable:
    """A mix (one of those to train) whose draw the source study may hold already."""

    mix: Path  # the mix file
    counts: dict  # ability -> items, as the mix gives them
    pool: str  # the train pool it draws from ("1000" | full)


@dataclass(frozen=True)
class TrainedMixes:
    """What `train_mixes` leaves: where, and which source cells stand for the reusable mix."""

    folder: Path  # WHERE: grid.yaml and study/
    study: Path  # the planned and run study (read it with `doit.grid.read_results`)
    reused: dict[int, str] | None  # {seed: source cell id} standing for the reusable mix


def mix_grid(
    source, base: str, mixes, seeds, name: str, reusable: Reusable | None = None, among=None
) -> tuple[dict, dict[int, str] | None]:
    """(the grid mapping, the reused cells): the module docstring; MixStudyError when
    ``source`` is not a planned study folder, ``base`` not one of its bases or no seed given.
    ``name``: the new study's name after the source's (``<source name>-<name>``); ``among``:
    `reusable_cells`'."""
    source = Path(source)
    if not (source / PLAN).is_file():
        raise MixStudyError(
            f"needs a study folder (with {PLAN}) to take the base and recipe from; "
            f"{source} is not one"
        )
    if not seeds:
        raise MixStudyError("needs training seeds to train the mixes with")
    raw = read_plan(source).grid.raw
    bases = [b for b in raw["bases"] if b.get("name") == base]
    if not bases:
        raise MixStudyError(f"{source}: {base} is not one of the study's bases")
    reused = (
        reusable_cells(source, base, reusable.counts, reusable.pool, seeds, among)
        if reusable
        else None
    )
    skip = {Path(reusable.mix).resolve()} if reused else set()
    trained = [str(m) for m in (Path(m).resolve() for m in mixes) if m not in skip]
    mapping = {
        "name": f"{raw['name']}-{name}",
        **{k: v for k, v in raw.items() if k not in DROP},
        "bases": bases,
        "data": {"mix": trained},
        "seed": sorted(set(seeds)),
        "sample_seed": [0],
    }
    return mapping, reused


def reusable_cells(source, base: str, counts, pool: str, seeds, among=None):
    """{seed: cell id} of ``source``'s cells that a mix of ``counts`` from ``pool`` (data seed
    0) would draw again: every ability the same n, and the study holds ``base``'s
    n-per-ability cell of that n (curated, no ability left out, that pool, data seed 0)
    finished for every seed; else None. ``among``: the cell ids that count as finished
    (default: those with results rows)."""
    source = Path(source)
    ns = set(counts.values())
    if len(ns) != 1 or not (source / PLAN).is_file():
        return None
    (n,) = ns
    found = {
        c.seed: c.id
        for c in read_plan(source).cells
        if c.kind == "sft"
        and c.base == base
        and c.n_per_ability == n
        and c.construction == "curated"
        and c.excluded_ability is None
        and c.sample_seed == 0
        and (c.recipe or {}).get("pool", "1000") == pool
        and (c.id in among if among is not None else results.shard_path(source, c.id).is_file())
    }
    return found if all(s in found for s in seeds) else None


def train_mixes(
    source,
    base: str,
    mixes,
    seeds,
    where,
    *,
    name: str,
    reusable: Reusable | None = None,
    among=None,
    made_by: str = "doit.grid.mix_study",
    max_parallel: int = 1,
    threads: int | None = None,
    backend: str = "local",
) -> TrainedMixes:
    """Write ``where/grid.yaml`` (its first line a comment naming ``made_by``), plan it into
    ``where/study`` and run its mix cells (the module docstring); the reusable mix's cells are
    found once, here."""
    where = Path(where)
    mapping, reused = mix_grid(source, base, mixes, seeds, name, reusable, among)
    path = atomic_write_text(
        where / "grid.yaml",
        f"# {made_by}\n" + yaml.safe_dump(mapping, sort_keys=False, allow_unicode=True),
    )
    write_plan(load_grid(path), where / STUDY, replan=True)
    run_study(where / STUDY, backend, max_parallel, threads, pattern=MIX_CELLS)
    return TrainedMixes(where, where / STUDY, reused)
