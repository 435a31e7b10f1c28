"""Which formulation's scores the analysis reads: one row per scored checkpoint and ability.

A cell's checkpoints may be scored in several formulations (the grid's ``eval_formulations``;
``doit.data.kinds.FORMULATIONS``): its results rows then differ only in ``formulation``.
Everything downstream (selection, bootstrap, fits) reads one row per (cell, epoch, split,
ability), chosen here by a rule (``FORMULATION_RULES``):

- ``max`` (the default): OLMES's rule (Gu et al., 2024), chosen on one split (``on``, the
  setting ``formulation_split``, default valid) and applied to every split, so that no split is
  read in the formulation that scored best on it: per ability, the formulation with the higher
  mean score on that split over the checkpoints (every cell and epoch) scored in each of them
  (ties: the cells' own). An ability without such a checkpoint on that split (a benchmark
  split's, or one valid never scored in both) is read in the cells' own formulation, said in a
  note. A study scored in one formulation is read as it is;
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
CHOSEN_ON = "valid"  # the split the max rule chooses on unless asked otherwise


def choose(
    table: pd.DataFrame,
    items: pd.DataFrame | None,
    rule: str = MAX,
    cell_formulation: str | None = None,
    on: str = CHOSEN_ON,
) -> tuple[pd.DataFrame, pd.DataFrame | None, tuple[str, ...]]:
    """(results rows, per-item rows, notes) with one row per (cell, epoch, split, ability) by
    ``rule`` (``max``: chosen per ability on the split ``on``, `max_choice`), of the cells
    trained in ``cell_formulation`` (None: the table must hold one)."""
    if rule not in FORMULATION_RULES:
        raise ValueError(
            f"formulation rule {rule!r}: expected one of {', '.join(FORMULATION_RULES)}"
        )
    table = _cells_of(table, cell_formulation)
    notes: tuple[str, ...] = ()
    if rule == MAX:
        picked, notes = max_choice(table, on)
        chosen = table[table["formulation"] == table["ability"].map(picked)]
    else:
        chosen = table[table["formulation"] == rule]
        if chosen.empty:
            raise ValueError(
                f"no results rows scored in the {rule} formulation (the table has "
                f"{', '.join(sorted(table['formulation'].unique()))})"
            )
    chosen = chosen.sort_values(KEY, ignore_index=True)
    if items is None:
        return chosen, None, notes
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
    return chosen, mine.astype({"epoch": "Float64"}), notes


def max_choice(table: pd.DataFrame, on: str = CHOSEN_ON) -> tuple[dict[str, str], tuple[str, ...]]:
    """(ability -> the formulation the max rule reads on every split, notes): per ability, the
    formulation with the higher mean score on the split ``on`` over the checkpoints scored
    (non-null) in every formulation of the ability; ties and abilities without such a
    checkpoint on ``on``: the cells' own formulation (the latter said in a note). No score of
    another split is read."""
    own = _own_formulation(table)
    scored = table[table["split"] == on].dropna(subset=["score"])
    formulations = table.groupby("ability")["formulation"].agg(lambda f: sorted(set(f.dropna())))
    picked, unjudged = {}, []
    for ability, names in formulations.items():
        if len(names) == 1:
            picked[ability] = names[0]
            continue
        mine = scored[scored["ability"] == ability]
        wide = mine.pivot_table(
            index=["cell", "epoch"], columns="formulation", values="score", aggfunc="first"
        ).reindex(columns=names)
        paired = wide.dropna()  # checkpoints scored in every formulation of the ability
        if paired.empty:
            unjudged.append(ability)
            picked[ability] = own if own in names else names[0]
            continue
        means = paired.mean()
        best = means[means == means.max()].index
        picked[ability] = own if own in best else best[0]
    notes = ()
    if unjudged:
        notes = (
            f"Formulation: {', '.join(sorted(unjudged))} had no checkpoint scored in every "
            f"formulation on {on}: read in the cells' own formulation ({own}), not chosen "
            "by the max rule.",
        )
    return picked, notes


def _own_formulation(table: pd.DataFrame) -> str | None:
    """The formulation the table's cells were trained in (one, `_cells_of` has checked)."""
    found = table["cell_formulation"].dropna().unique()
    return str(found[0]) if len(found) else None


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


def describe(table: pd.DataFrame, rule: str, on: str = CHOSEN_ON) -> str:
    """One sentence: how the cells trained, what they were scored in, and the rule read."""
    trained = ", ".join(sorted(table["cell_formulation"].dropna().unique()))
    scored = ", ".join(sorted(table["formulation"].dropna().unique()))
    how = (
        f"per ability the formulation with the higher mean {on} score (OLMES's max rule, "
        f"chosen on {on} and read on every split)"
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
