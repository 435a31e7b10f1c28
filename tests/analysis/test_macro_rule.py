"""The analysis's macros follow doit.data.macro: the curriculum validation's differences."""

import math

import numpy as np
import pytest

from doit.analysis.curriculum import validate as val
from doit.analysis.select import select_checkpoints
from doit.data import abilities as ab
from doit.grid.results import frame


def _validation(lacking: str | None):
    """Test rows and per-item rows of a uniform and a marginal cell; marginal scores every
    ability 10 points higher and has no row for ``lacking``."""
    rng = np.random.default_rng(0)
    rows, items = [], []
    for policy, p in (("uniform", 0.4), ("marginal", 0.5)):
        for k in ab.ABILITY_KEYS:
            if policy == "marginal" and k == lacking:
                continue
            correct = rng.random(200) < (0.9 if k == "math" else p)
            rows.append(
                dict(
                    cell=policy,
                    base="t",
                    arch="llama",
                    params=1,
                    construction="mix",
                    mix=policy,
                    n_total=10,
                    seed=0,
                    epoch=1.0,
                    step=1,
                    split="test",
                    ability=k,
                    score=100 * correct.mean(),
                    n_items=200,
                    chance=25.0,
                )
            )
            items += [
                dict(cell=policy, epoch=1.0, split="test", ability=k, type=k, idx=i, correct=c)
                for i, c in enumerate(correct.tolist())
            ]
    selected = select_checkpoints(frame(rows), "last")
    diff = val.differences(selected, frame(items, per_item=True), 200, 0)
    return diff.set_index("ability")


def test_the_validation_macro_is_null_when_the_policy_lacks_an_in_domain_ability():
    full = _validation(None)
    per = full.loc[list(ab.ABILITY_KEYS), "diff"]
    assert full.loc["macro", "diff"] == pytest.approx(per.mean())
    assert full.loc["macro", "diff_lo"] < full.loc["macro", "diff"] < full.loc["macro", "diff_hi"]
    lacking = _validation("math")
    assert "math" not in lacking.index and len(lacking) == 9 + 2
    for name in ("macro", "overall"):  # not the mean over the nine both cells have
        row = lacking.loc[name]
        assert all(math.isnan(row[c]) for c in ("diff", "diff_lo", "diff_hi", "uniform", "score"))
