"""doit grid table's score table: seeds averaged per column, the macro row by doit.data.macro."""

import pandas as pd
import pytest

from doit.data import abilities as ab
from doit.grid.results import frame
from doit.grid.table import score_table


def _rows(cell: str, n: int, scores: dict) -> list[dict]:
    common = dict(
        cell=cell,
        base="s",
        arch="llama",
        params=10**7,
        construction="curated",
        n_per_ability=n,
        n_total=10 * n,
        seed=0,
        epoch=5.0,
        step=5,
        split="test",
        n_items=10,
        chance=25.0,
        formulation="letter",
    )
    return [{**common, "ability": k, "score": v} for k, v in scores.items()]


def test_a_column_lacking_an_in_domain_ability_has_no_macro():
    full = {k: 40.0 for k in ab.ABILITY_KEYS}
    table = score_table(
        frame(
            _rows("s16", 16, full)
            + _rows("s64", 64, {k: v for k, v in full.items() if k != "math"} | {"code": 100.0})
        )
    )
    macro = table.loc["macro (10 abilities)"]
    assert macro["s n=16"] == pytest.approx(40.0)
    assert pd.isna(macro["s n=64"])  # not the mean of the nine it has
    assert macro["chance"] == pytest.approx(25.0)
