"""Checkpoint selection: which epoch of each cell is reported (the only implementation in doit).

Rules (``SELECTION_RULES``):

- ``study``: per cell, the epoch with the best macro in-domain validation score among epochs
  >= 5 (``MIN_EPOCH``), reported on test and the benchmarks (the published study's rule);
- ``study-per-ability``: the same, but each ability picks its own epoch by its own valid score;
- ``best-valid``: the best macro validation epoch, any epoch;
- ``last``: the last epoch.

A cell with no eligible epoch (fewer than 5 epochs, no validation rows, or an n = 0 base cell)
falls back to its last epoch; ``fallback`` records it, ``rule`` names the rule on every row.
The macro is ``doit.data.macro``'s: the in-domain abilities the study scores on valid, and an
epoch where one of them is missing or null has none, so it is not eligible (a mean over fewer
abilities would favour the epoch whose hardest ability failed to score).

The reported splits are every split but ``valid`` unless ``splits`` names them; ``valid`` may
be reported only under ``last``, the one rule that does not choose by it (a study with few
items pools valid and test, as the micro study does).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from doit.data import abilities as ab
from doit.data.macro import macro_by

SELECTION_RULES = ("study", "study-per-ability", "best-valid", "last")
MIN_EPOCH = 5.0


def select_checkpoints(
    table: pd.DataFrame, rule: str = "study", splits: tuple[str, ...] | None = None
) -> pd.DataFrame:
    """The reported rows (``splits``; default every split but ``valid``) of each cell's selected
    checkpoint, with ``rule``, ``selected_epoch`` and ``fallback`` columns."""
    if rule not in SELECTION_RULES:
        raise ValueError(f"checkpoint rule {rule!r}: expected one of {', '.join(SELECTION_RULES)}")
    if splits is not None and "valid" in splits and rule != "last":
        raise ValueError(
            f"checkpoint rule {rule!r} chooses by the valid split, so it cannot "
            "also report it (use rule 'last' to report valid)"
        )
    chosen = _chosen_epochs(table, rule)  # cell[, ability] -> epoch, fallback
    keys = ["cell", "ability"] if rule == "study-per-ability" else ["cell"]
    if splits is None:
        reported = table[table["split"] != "valid"]
    else:
        reported = table[table["split"].isin(splits)]
    out = reported.merge(chosen, on=keys, how="inner")
    out = out[out["epoch"] == out["selected_epoch"]].copy()
    out["rule"] = rule
    return out.sort_values(["cell", "split", "ability"], ignore_index=True)


def _chosen_epochs(table: pd.DataFrame, rule: str) -> pd.DataFrame:
    epochs = table[["cell", "epoch", "construction", "n_per_ability"]].drop_duplicates(
        ["cell", "epoch"]
    )
    last = epochs.groupby("cell")["epoch"].max().rename("last")
    base = epochs.groupby("cell").apply(_is_base, include_groups=False).rename("is_base")
    valid = table[(table["split"] == "valid") & table["ability"].isin(ab.ABILITY_KEYS)]
    if rule == "study-per-ability":
        valid = valid[valid["score"].notna()]
    expected = set(valid["ability"])  # the in-domain abilities the study scores on valid
    if rule != "best-valid":
        valid = valid[valid["epoch"] >= MIN_EPOCH]
    if rule == "last":
        valid = valid.iloc[0:0]
    if rule == "study-per-ability":
        best = _best(valid, ["cell", "ability"])
        cells = table[["cell", "ability"]].drop_duplicates()
    else:
        macro = macro_by(valid, ["cell", "epoch"], expected).dropna(subset=["score"])
        best = _best(macro, ["cell"])
        cells = table[["cell"]].drop_duplicates()
    keys = list(cells.columns)
    out = cells.merge(best, on=keys, how="left").join(last, on="cell").join(base, on="cell")
    out["fallback"] = out["epoch"].isna() | out["is_base"]
    out["selected_epoch"] = np.where(out["fallback"], out["last"], out["epoch"])
    out["selected_epoch"] = out["selected_epoch"].astype("Float64")
    return out[[*keys, "selected_epoch", "fallback"]]


def _best(scores: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per key, the epoch of the highest score (ties: the earliest epoch)."""
    if scores.empty:
        return pd.DataFrame({**{k: pd.Series(dtype="string") for k in keys}, "epoch": []})
    ordered = scores.sort_values(
        [*keys, "score", "epoch"], ascending=[True] * len(keys) + [False, True]
    )
    return ordered.drop_duplicates(keys)[[*keys, "epoch"]]


def _is_base(rows: pd.DataFrame) -> bool:
    n = rows["n_per_ability"]
    return bool((rows["construction"] == "base").any() or (n.notna() & (n == 0)).any())
