"""Which formulation's scores the analysis reads: one row per scored checkpoint and ability.

A cell's checkpoints may be scored in several formulations (the grid's ``eval_formulations``;
``doit.data.kinds.FORMULATIONS``): its results rows then differ only in ``formulation``.
Everything downstream (selection, bootstrap, fits) reads one row per (cell, epoch, split,
ability), chosen here by a rule (``FORMULATION_RULES``):

- ``max`` (the default): OLMES's rule (Gu et al., 2024): of the formulations a checkpoint was
  scored in, the one with the higher score, per ability and split (ties: the cell's own);
  a study scored in one formulation is read as it is;
- a formulation's name: only the rows scored in it.

The per-item rows follow the chosen rows, so the paired bootstrap resamples the items of the
formulation each row reports. Cells trained in different formulations (a grid whose
``formulation`` is a list) are different studies of the same abilities: the analysis reads one
at a time (``cell_formulation``), and says which.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from doit.data.kinds import FORMULATIONS

MAX = "max"
FORMULATION_RULES = (MAX, *FORMULATIONS)
KEY = ["cell", "epoch", "split", "ability"]


def choose(
    table: pd.DataFrame,
    items: pd.DataFrame | None,
    rule: str = MAX,
    cell_formulation: str | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """(results rows, per-item rows) with one row per (cell, epoch, split, ability) by ``rule``,
    of the cells trained in ``cell_formulation`` (None: the table must hold one)."""
    if rule not in FORMULATION_RULES:
        raise ValueError(
            f"formulation rule {rule!r}: expected one of {', '.join(FORMULATION_RULES)}"
        )
    table = _cells_of(table, cell_formulation)
    if rule == MAX:
        own = (table["formulation"] == table["cell_formulation"]).fillna(False)
        ordered = table.assign(_own=own).sort_values(
            [*KEY, "score", "_own"],
            ascending=[True] * len(KEY) + [False, False],
            na_position="last",
        )
        chosen = ordered.drop_duplicates(KEY).drop(columns="_own")
    else:
        chosen = table[table["formulation"] == rule]
        if chosen.empty:
            raise ValueError(
                f"no results rows scored in the {rule} formulation (the table has "
                f"{', '.join(sorted(table['formulation'].unique()))})"
            )
    chosen = chosen.sort_values(KEY, ignore_index=True)
    if items is None:
        return chosen, None
    keys = [*KEY, "formulation"]
    picked = chosen[keys].astype(
        {
            "cell": "string",
            "split": "string",
            "ability": "string",
            "formulation": "string",
            "epoch": float,
        }
    )
    mine = items.astype({"epoch": float}).merge(picked, on=keys, how="inner")
    return chosen, mine.astype({"epoch": "Float64"})


def _cells_of(table: pd.DataFrame, cell_formulation: str | None) -> pd.DataFrame:
    found = sorted(table["cell_formulation"].dropna().unique())
    if cell_formulation is None:
        if len(found) > 1:
            raise ValueError(
                f"the table holds cells trained in the {' and '.join(found)} "
                "formulations (a formulation axis): analyse one at a time "
                "(--cell-formulation NAME)"
            )
        return table
    if cell_formulation not in found:
        raise ValueError(
            f"no cells trained in the {cell_formulation} formulation (the table "
            f"has {', '.join(found)})"
        )
    return table[table["cell_formulation"] == cell_formulation]


def comparison(table: pd.DataFrame) -> pd.DataFrame:
    """For checkpoints scored in more than one formulation: the mean score (over their cells
    and seeds) of each formulation and of the per-checkpoint maximum, per (base, n, split,
    ability); empty when every checkpoint has one formulation."""
    counts = table.groupby(KEY)["formulation"].transform("nunique")
    several = table[counts > 1]
    if several.empty:
        return pd.DataFrame()
    by = ["base", "n_per_ability", "split", "ability"]
    wide = several.pivot_table(
        index=[*by, "cell", "epoch"], columns="formulation", values="score", aggfunc="first"
    )
    wide[MAX] = wide.max(axis=1)
    out = wide.groupby(level=by).mean().reset_index()
    out.columns.name = None
    return out


def describe(table: pd.DataFrame, rule: str) -> str:
    """One sentence: how the cells trained, what they were scored in, and the rule read."""
    trained = ", ".join(sorted(table["cell_formulation"].dropna().unique()))
    scored = ", ".join(sorted(table["formulation"].dropna().unique()))
    how = (
        "the higher score of a checkpoint's formulations, per ability and split (OLMES's max rule)"
        if rule == MAX
        else f"the {rule} formulation's rows"
    )
    return (
        f"Formulation: cells trained (an untuned base: rendered) in {trained}, scored in "
        f"{scored}; the analysis reads {how}."
    )


TEXT_KINDS = ("mc_text", "tf_text", "multiselect_text")


def compare_norms(
    study, norms=None, splits=("valid",), replicates: int = 2000, seed: int = 0
) -> pd.DataFrame:
    """The ranking normalisations compared on a study's text scorings of ``splits``: per
    normalisation, the score over every item of the abilities with text-formulation items
    (every cell, seeds pooled), and per pair the difference, each with its 95% CI, all from
    one paired item bootstrap (``doit.analysis.bootstrap``: the same item draws for every
    normalisation and cell; a checkpoint's seed draw shared by its normalisations). Rows ``all`` and per ability."""
    from doit.analysis.bootstrap import bootstrap_counts
    from doit.eval.kinds import NORMS
    from doit.grid import rescore

    norms = list(norms or NORMS)
    rows, items = [], []
    for norm in norms:
        r, i = rescore(study, norm, splits)
        mine = set(i.loc[i["answer_kind"].isin(TEXT_KINDS), "ability"])
        mine_rows = r[r["ability"].isin(mine)].assign(trained_cell=r["cell"])  # one seed draw
        rows.append(mine_rows.assign(cell=r["cell"] + "|" + norm, mix=norm))
        items.append(i[i["ability"].isin(mine)].assign(cell=i["cell"] + "|" + norm))
    counts = bootstrap_counts(
        pd.concat(rows), pd.concat(items), replicates, seed, splits=tuple(splits)
    )
    pts = counts.points
    out = []
    for ability in ["all", *sorted(pts["ability"].unique())]:
        where = pts["ability"].notna() if ability == "all" else pts["ability"] == ability
        pooled = {}
        for norm in norms:
            cols = np.flatnonzero((where & (pts["mix"] == norm)).to_numpy(dtype=bool))
            pooled[norm] = counts.pooled(cols)
            out.append(
                {
                    "ability": ability,
                    "compared": norm,
                    "points": len(cols),
                    **_ci(pooled[norm]),
                }
            )
        for a, b in itertools.combinations(norms, 2):
            out.append(
                {
                    "ability": ability,
                    "compared": f"{a} - {b}",
                    "points": None,
                    **_ci(pooled[a].minus(pooled[b])),
                }
            )
    return pd.DataFrame(out)


def _ci(estimate) -> dict:
    value, lo, hi = estimate.ci()
    return {"value": value, "lo": lo, "hi": hi}
