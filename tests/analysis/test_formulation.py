"""Which formulation's rows the analysis reads: OLMES's max rule, one formulation, one set of
cells."""

from __future__ import annotations

import pandas as pd
import pytest

from doit.analysis.formulation import choose, comparison, describe


def rows() -> pd.DataFrame:
    base = {"base": "s", "n_per_ability": 4, "epoch": 1.0, "split": "test"}
    return pd.DataFrame(
        [
            {**base, "cell": "a", "ability": "biology", "formulation": "letter", "score": 25.0},
            {**base, "cell": "a", "ability": "biology", "formulation": "text", "score": 40.0},
            {**base, "cell": "a", "ability": "history", "formulation": "letter", "score": 50.0},
            {**base, "cell": "a", "ability": "history", "formulation": "text", "score": 50.0},
            {**base, "cell": "a", "ability": "code", "formulation": "letter", "score": None},
            {**base, "cell": "a", "ability": "code", "formulation": "text", "score": 70.0},
        ]
    ).assign(cell_formulation="letter")


def items() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "cell": "a",
                "epoch": 1.0,
                "split": "test",
                "ability": r.ability,
                "formulation": r.formulation,
                "type": r.ability,
                "idx": 0,
                "correct": True,
            }
            for r in rows().itertuples()
        ]
    )


def test_max_takes_the_better_formulation_ties_the_cells_own_and_items_follow():
    table, its = choose(rows(), items())
    got = dict(zip(table["ability"], table["formulation"]))
    assert got == {"biology": "text", "history": "letter", "code": "text"}  # null never wins
    assert sorted(zip(its["ability"], its["formulation"])) == sorted(got.items())


def test_one_formulation_and_mixed_cells():
    table, _ = choose(rows(), None, "letter")
    assert set(table["formulation"]) == {"letter"} and len(table) == 3
    with pytest.raises(ValueError, match="expected one of max, letter, text"):
        choose(rows(), None, "cloze")
    mixed = pd.concat([rows(), rows().assign(cell="b", cell_formulation="text")])
    with pytest.raises(ValueError, match="trained in the letter and text formulations"):
        choose(mixed, None)
    assert set(choose(mixed, None, cell_formulation="text")[0]["cell"]) == {"b"}
    assert "OLMES" in describe(rows(), "max") and "letter" in describe(rows(), "letter")


def test_comparison_lists_each_formulation_and_the_max():
    table = comparison(rows())
    bio = table[table["ability"] == "biology"].iloc[0]
    assert (bio["letter"], bio["text"], bio["max"]) == (25.0, 40.0, 40.0)
    assert comparison(rows()[rows()["formulation"] == "text"]).empty
