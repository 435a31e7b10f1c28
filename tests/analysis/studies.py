"""Planted studies more than one test module reads (built here once)."""

from __future__ import annotations

import pandas as pd

from doit.analysis.synthetic import BASES, Curve, planted_study
from doit.data import abilities as ab
from doit.grid.random_mixes import draw

KEYS = ab.ABILITY_KEYS
MIX_BUDGET = 640  # items each random mix draws


def mix_study(tokens: bool = False) -> pd.DataFrame:
    """One base, n = 4..256 per ability, leave-one-out cells at 64 and 14 random mixes of
    ``MIX_BUDGET`` items (no per-item rows); ``tokens``: with tokens per item (10 each)."""
    curves = {
        k: Curve(a=-2.5 + 0.2 * i, b_data=0.1 * (i % 5), b_size=0.0, transference=0.3)
        for i, k in enumerate(KEYS)
    }
    mixes = {
        f"random-s0-{i:03d}": m
        for i, m in enumerate(draw(dict.fromkeys(KEYS, 1000), 14, MIX_BUDGET, 1.0, 0))
    }
    table, _, _ = planted_study(
        curves,
        bases={"s": BASES["s"]},
        ns=(4, 16, 64, 256),
        n_items=100,
        loo_ns=(64,),
        epochs=(5.0,),
        per_item=False,
        rng=0,
        mixes=mixes,
        tokens=dict.fromkeys(KEYS, 10.0) if tokens else None,
    )
    return table
