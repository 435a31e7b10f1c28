"""``python -m doit.grid table STUDY``: per-ability test scores by base and n, for people.

Each cell's last scored epoch is shown (checkpoint selection belongs to ``doit.analysis``); the
header says so. Columns are ``<base> n=<n>``, seeds averaged (``<base> n=<n> <formulation>``
when the study scores in several formulations); rows the abilities, then the macro mean of the
in-domain abilities (the ten, or those the study scores; empty for a column lacking one:
``doit.data.macro``), with each ability's chance score beside it. A study
of pretraining cells only shows its pretraining table (final validation loss by base and seed).
"""

from __future__ import annotations

import pandas as pd

from doit.data import abilities as ab
from doit.data import macro as macro_rule
from doit.grid.plan import read_plan
from doit.grid.pretraining import read_pretraining
from doit.grid.results import read_results


def last_epoch_scores(df: pd.DataFrame, split: str = "test") -> pd.DataFrame:
    df = df[
        (df["split"] == split)
        & df["construction"].isin(["base", "curated"])
        & df["excluded_ability"].isna()
    ]
    last = df.groupby("cell")["epoch"].transform("max")
    return df[df["epoch"] == last]


def score_table(df: pd.DataFrame, split: str = "test") -> pd.DataFrame:
    df = last_epoch_scores(df, split)
    label = df["base"] + " n=" + df["n_per_ability"].astype(str)
    if df["formulation"].nunique() > 1:
        label = label + " " + df["formulation"]
    df = df.assign(column=label)
    table = df.pivot_table(index="ability", columns="column", values="score", aggfunc="mean")
    first = df.drop_duplicates("column").set_index("column")
    order = sorted(
        table.columns,
        key=lambda c: (
            first.loc[c, "base"],
            int(first.loc[c, "n_per_ability"]),
            first.loc[c, "formulation"],
        ),
    )
    keys = [k for k in (*ab.ABILITY_KEYS, *ab.OOD_KEYS) if k in table.index]
    table = table.loc[keys, order]
    in_domain = macro_rule.in_domain(keys)  # the study's; a column lacking one has no macro
    label = f"macro ({len(in_domain)} abilities)"
    long = (
        table.rename_axis("ability")
        .reset_index()
        .melt("ability", var_name="column", value_name="score")
    )
    macros = macro_rule.macro_by(long, ["column"], expected=in_domain).set_index("column")
    table.loc[label] = macros["score"].reindex(table.columns)
    chance = df.groupby("ability")["chance"].first()
    table.insert(0, "chance", chance.reindex(table.index))
    table.loc[label, "chance"] = chance.reindex(in_domain).mean()
    table.columns.name = table.index.name = None
    return table


def print_table(study, split: str = "test") -> int:
    if read_plan(study).kinds() == {"pretrain"}:
        df = read_pretraining(study)
        print("final validation loss (nats per token) of each pretraining cell")
        print(df.drop(columns=["cell"]).to_string(index=False, float_format="{:.4f}".format))
        return 0
    df = read_results(study)
    table = score_table(df, split)
    formulations = ", ".join(sorted(df["formulation"].dropna().unique()))
    print(
        f"{split} scores (0-100) at each cell's last epoch; seeds averaged; formulation "
        f"{formulations}; checkpoint selection: python -m doit.analysis"
    )
    print(table.round(1).to_string(na_rep="-"))
    cut = last_epoch_scores(df, split).groupby("ability")["n_no_output"].max().fillna(0)
    for ability, n in cut[cut > 0].items():
        print(
            f"note: {ability}: up to {n} items a cell got no output (prompt longer than the "
            "model's context; scored wrong)"
        )
    return 0
