"""doit.data.macro: the one macro rule (which abilities; a missing one makes it null)."""

import math

import pandas as pd
import pytest

from doit.data import abilities as ab
from doit.data.macro import complete_mean, in_domain, macro, macro_by


def test_the_macro_averages_the_ten_in_domain_abilities_and_never_the_ood_sets():
    scores = {k: 50.0 for k in ab.ABILITY_KEYS} | {k: 0.0 for k in ab.OOD_KEYS}
    scores["math"] = 60.0
    assert macro(scores) == pytest.approx(51.0)
    assert in_domain(["ceval_physician", "math", "biology"]) == ("biology", "math")


def test_a_missing_or_null_ability_makes_the_macro_null_not_the_mean_of_the_rest():
    scores = {k: 50.0 for k in ab.ABILITY_KEYS}
    assert macro({k: v for k, v in scores.items() if k != "math"}) is None
    assert macro(scores | {"math": None}) is None
    assert macro(scores | {"math": math.nan}) is None
    # a study of fewer abilities expects only those
    assert macro({"biology": 40.0, "code": 60.0}, expected=["biology", "code"]) == 50.0
    assert macro({"biology": 40.0}, expected=["biology", "code"]) is None
    assert complete_mean({"a": 1.0, "b": 3.0}, ["a", "b"]) == 2.0
    assert complete_mean({"a": 1.0}, ["a", "b"]) is None


def test_macro_by_gives_nan_to_a_group_lacking_an_expected_ability():
    rows = pd.DataFrame(
        {
            "cell": ["x", "x", "y", "y", "z"],
            "ability": ["biology", "code", "biology", "code", "biology"],
            "score": [40.0, 60.0, 90.0, None, 70.0],
        }
    )
    out = macro_by(rows, ["cell"]).set_index("cell")["score"]
    assert out["x"] == 50.0 and math.isnan(out["y"]) and math.isnan(out["z"])
    only_biology = macro_by(rows, ["cell"], expected=["biology"]).set_index("cell")["score"]
    assert only_biology.to_dict() == {"x": 40.0, "y": 90.0, "z": 70.0}
