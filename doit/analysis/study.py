"""The one reader of a study for the analysis: every consumer (`pipeline.Analysis`, the micro
targets, the curriculum and its validation, ``run --budget``, the demo) reads a study's rows
through `read_study`, so every one sees the same rows.

It reads the results table and its per-item rows (``doit.grid.read_results``,
``doit.grid.results.read_items``), refuses scores on a 0-1 scale, leaves out the abilities the
registry does not know (said in ``notes``), and keeps one row per (cell, epoch, split, ability)
by the formulation rule (`doit.analysis.formulation.choose`: ``max`` chooses on one split, valid
by default, and reads that choice on every split), the per-item rows following the kept rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from doit.analysis import formulation as form
from doit.data import abilities as ab
from doit.grid.results import earlier_stage, read_items, read_results

SCORED_SPLITS = ("valid", "test")  # the splits whose abilities are the registry's


@dataclass(frozen=True)
class StudyRows:
    """What `read_study` read."""

    table: pd.DataFrame  # one row per (cell, epoch, split, ability): the formulation rule's
    items: pd.DataFrame | None  # the per-item rows of those rows; None without per-item rows
    all_rows: pd.DataFrame  # every formulation a checkpoint was scored in, known abilities
    notes: tuple[str, ...]  # what was left out, in sentences


def read_study(
    source,
    formulation: str = form.MAX,
    cell_formulation: str | None = None,
    formulation_split: str = form.CHOSEN_ON,
    bases: tuple[str, ...] | None = None,
    stages: bool = False,
) -> StudyRows:
    """The rows of the study folder or table file ``source`` (module docstring), of the cells
    trained in ``cell_formulation`` (None: the table must hold one) by the rule
    ``formulation`` (``max``: chosen on ``formulation_split``), of the ``bases`` named (None:
    every base; a name the table lacks is a ValueError naming it). With ``stages``, a staged
    cell's earlier stages' rows too (forgetting), each stage k's as the cell
    ``<cell>@stage<k>`` (`stage_cell`), so every rule reads it as a cell of its own."""
    rows = read_results(source, stages=stages)
    check_scale(rows, str(source))
    items = read_items(source, stages=stages)
    if stages:
        rows, items = (None if t is None else _stage_cells(t) for t in (rows, items))
    if bases is not None:
        rows, items = only_bases(rows, items, bases, str(source))
    unknown = unknown_abilities(rows)
    notes = ()
    if unknown:
        notes = (
            f"Abilities not in the ability registry, left out: {', '.join(unknown)} "
            "(doit.data.abilities lists the known keys).",
        )
        rows = rows[~rows["ability"].isin(unknown)].reset_index(drop=True)
    table, items, chosen = form.choose(
        rows, items, formulation, cell_formulation, formulation_split
    )
    return StudyRows(table, items, rows, (*notes, *chosen))


STAGE_MARK = "@stage"  # an earlier stage's cell name: <cell>@stage<k> (`stage_cell`)


def stage_cell(cell: str, stage: int) -> str:
    """The name an earlier stage's rows carry as their cell (``read_study(stages=True)``)."""
    return f"{cell}{STAGE_MARK}{stage}"


def is_stage_cell(cells: pd.Series) -> pd.Series:
    """Which cell names are an earlier stage's (`stage_cell`)."""
    return cells.astype(str).str.contains(STAGE_MARK, regex=False)


def _stage_cells(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with each earlier stage's rows (`doit.grid.results.earlier_stage`) renamed to
    their `stage_cell`."""
    earlier = earlier_stage(table)
    if not earlier.any():
        return table
    cell = table["cell"].astype(object).to_numpy(copy=True)
    stage = table["stage"].to_numpy()
    cell[earlier] = [stage_cell(c, int(k)) for c, k in zip(cell[earlier], stage[earlier])]
    return table.assign(cell=pd.array(cell, dtype="string"))


def only_bases(rows: pd.DataFrame, items: pd.DataFrame | None, bases, source: str):
    """The rows (and per-item rows) of the cells of ``bases``; an unknown name is an error."""
    missing = sorted(set(bases) - set(rows["base"].dropna().astype(str)))
    if missing:
        raise ValueError(f"{source}: --bases: no rows of base(s) {', '.join(missing)}")
    rows = rows[rows["base"].isin(bases)].reset_index(drop=True)
    if items is not None:
        items = items[items["cell"].isin(set(rows["cell"]))].reset_index(drop=True)
    return rows, items


def unknown_abilities(table: pd.DataFrame) -> list[str]:
    """Abilities of the valid/test rows that the registry does not know (benchmark splits
    carry their benchmark's name and are left alone)."""
    rows = table[table["split"].isin(SCORED_SPLITS)]
    known = {a.key for a in ab.ALL}
    return sorted(set(rows["ability"].dropna().astype(str)) - known)


def check_scale(table: pd.DataFrame, source: str) -> None:
    """Refuse scores on a 0-1 scale: every score <= 1 while chance is in points."""
    scores, chance = table["score"].dropna(), table["chance"].dropna()
    if len(scores) and scores.max() <= 1 and len(chance) and chance.max() > 1:
        raise ValueError(
            f"{source}: score: every score is <= 1 while chance is in points (up "
            f"to {chance.max():g}): the table is on a 0-1 scale; scores are 0-100"
        )
