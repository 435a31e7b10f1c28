"""Predicted gains that are not the optimum's own estimate, and intervals for what training
then measures (#32).

**Cross-fit.** Exactly maximising a noisy plug-in estimate overstates the optimum (the
optimiser's curse: a predicted +5.9 measured +2.5 in studies/curriculum_micro). ``halves``
splits the fitted split's items of every ability in two (a seeded permutation of its item ids,
shared by every cell, so each half is a paired study of its own); a policy that chooses from the
fits (``Policy.crossfit``) chooses on one half and its allocation is scored against uniform's by
the other half's curves, both ways round; the predicted score and gain are the mean of the two
directions, replicate by replicate (the halves' bootstraps are independent). The allocation
written is the one chosen on all items; what is predicted is the gain of choosing this way (the
macro row: `core.predictions`; the ability rows predict the written counts).

**Noise of a trained comparison** (``arm_noise``): each replicate of a predicted score gets a
fresh training-seed draw for the run that would train it, and a gain the difference of two (the
policy's and uniform's; one seed per arm): on the logit of the predicted score, the ability's
seed component (`bootstrap.Counts.seed_table`: the estimate, or the ``--seed-sd`` prior; none
without either, and ``resamples`` says so), one standard-normal draw per run shared by its
abilities at the analysis's ``seed_corr`` (`bootstrap.correlated`), as the bootstrap draws a
cell's. A count beyond the largest observed n adds a normal draw with SD its ability's held-out
one-step prediction error on the target (`doit.analysis.predict`, largest_n; the mean over
abilities where it has none).
"""

from __future__ import annotations

import weakref

import numpy as np
import pandas as pd
from scipy.special import expit, logit

from doit.analysis.bootstrap import correlated, recounted
from doit.analysis.pipeline import Analysis
from doit.analysis.study import StudyRows

SPLIT_SEED = 32  # the halves' permutation stream (beside the analysis's bootstrap seed)
NOISE_SEED = 3200  # the arms' seed and extrapolation draws
CROSSFIT = "cross-fitted on two halves of the items"
PLUG_IN = "plug-in (the fits of every item)"


_HALVES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # analysis -> its halves


def halves(a: Analysis) -> tuple[Analysis, Analysis] | None:
    """The analysis of each half of the fitted split's items (the rest of the study as it
    is), under the same settings, made once per analysis; None without per-item rows of that
    split."""
    if a not in _HALVES:
        _HALVES[a] = _halves(a)
    return _HALVES[a]


def _halves(a: Analysis) -> tuple[Analysis, Analysis] | None:
    items, split = a.items, a.settings.split
    if items is None or not (items["split"] == split).any():
        return None
    mine = items["split"] == split
    ids = items.loc[mine, ["ability", "type", "idx"]].drop_duplicates()
    rng = np.random.default_rng(a.settings.seed + SPLIT_SEED)
    first = []
    for _, block in ids.groupby("ability", sort=True):
        order = rng.permutation(len(block))
        first.append(block.iloc[order[: len(block) // 2]])
    ids = ids.merge(pd.concat(first).assign(half=0), how="left", on=list(ids.columns))
    half = items.merge(ids.fillna({"half": 1}), how="left", on=["ability", "type", "idx"])["half"]
    out = []
    for h in (0, 1):
        keep = items[(~mine | (half.to_numpy() == h))]
        table = recounted(a.table, keep, split)
        rows = StudyRows(table, keep.reset_index(drop=True), table, tuple(a.notes))
        out.append(Analysis(a.source, a.settings, study=rows))
    return out[0], out[1]


def seed_sds(counts, abilities) -> np.ndarray:
    """Each ability's training-seed SD on the score's logit (0 where the study has none)."""
    table = counts.seed_table.set_index("ability")["seed_sd"] if len(counts.seed_table) else {}
    return np.array([float(np.nan_to_num(table.get(a, 0.0))) for a in abilities])


def arm_noise(ev, counts: dict, point: np.ndarray, replicates: int, stream: int) -> np.ndarray:
    """(R, K) draws a trained run of ``counts`` (predicted ``point``) adds to its score: its
    seed draw, and the held-out extrapolation error of its counts beyond the evidence."""
    rng = np.random.default_rng([NOISE_SEED, stream])
    sd = seed_sds(ev.analysis.counts, ev.abilities)
    p = np.clip(point / 100, 1e-6, 1 - 1e-6)
    z = rng.standard_normal((replicates, 1))
    corr = ev.analysis.counts.seed_corr
    if corr < 1:  # the run's draw mixed with each ability's own
        own = np.random.default_rng([NOISE_SEED, stream, 1]).standard_normal((replicates, len(sd)))
        z = correlated(z, own, corr)
    noise = 100 * (expit(logit(p)[None] + sd[None] * z) - p[None])
    errors = np.array([ev.heldout.get(a, np.nan) for a in ev.abilities], float)
    fill = float(np.nanmean(errors)) if np.isfinite(errors).any() else 0.0
    beyond = np.array([counts[a] > ev.model.grid_max for a in ev.abilities])
    spread = np.where(beyond, np.nan_to_num(errors, nan=fill), 0.0)
    return noise + rng.standard_normal(noise.shape) * spread[None]
