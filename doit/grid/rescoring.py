"""A study's text-formulation scorings judged again from their stored predictions, under another
ranking normalisation (``doit.eval.kinds.NORMS``), without loading a model: the runner's results
and per-item rows with ``score`` and ``correct`` replaced (what ``doit.analysis.formulation.
compare_norms`` compares). Only the text kinds' verdicts can change: open items keep the
study's perplexity rule."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from doit.data.kinds import TEXT
from doit.eval.evaluate import load_split_items, output_paths
from doit.eval.score import score_file
from doit.grid.evaluate import checkpoint_folder, score_rows
from doit.grid.plan import CELLS, read_plan
from doit.grid.results import read_results


def rescore(study, norm: str, splits=("valid",)) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(results rows, per-item rows) of ``study``'s text-formulation scorings on ``splits``,
    judged again under ``norm`` from each scored checkpoint's stored predictions."""
    grid = read_plan(study).grid
    rows, items = read_results(study), read_results(study, per_item=True)
    rows = rows[rows["split"].isin(splits) & (rows["formulation"] == TEXT)]
    loaded = {
        s: load_split_items(grid.doit_dir, s, ood=s == "test", formulation=TEXT) for s in splits
    }
    new_rows, new_items = [], []
    for (cell, epoch, step, split), block in rows.groupby(["cell", "epoch", "step", "split"]):
        folder = checkpoint_folder(Path(study) / CELLS / cell, float(epoch), int(step))
        scores = score_file(loaded[split], output_paths(folder, split, TEXT)[0], norm=norm)
        got, verdicts = score_rows(split, scores, TEXT)
        score = {r["ability"]: r["score"] for r in got}
        new_rows.append(block.assign(score=block["ability"].map(score).astype("Float64")))
        mine = items[
            (items["cell"] == cell)
            & (items["epoch"] == epoch)
            & (items["split"] == split)
            & (items["formulation"] == TEXT)
        ]
        correct = {(v["type"], v["idx"]): v["correct"] for v in verdicts}
        new_items.append(mine.assign(correct=[correct[k] for k in zip(mine["type"], mine["idx"])]))
    return pd.concat(new_rows, ignore_index=True), pd.concat(new_items, ignore_index=True)
