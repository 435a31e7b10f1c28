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


def split_rows(test_scores=None) -> pd.DataFrame:
    """Two cells scored in both formulations on valid and test: on valid biology reads
    better in letter and history ties; on test biology reads better in text (by
    ``test_scores``: formulation -> biology's test score)."""
    test_scores = test_scores or {"letter": 30.0, "text": 60.0}
    out = []
    for cell, bump in (("a", 0.0), ("b", 4.0)):
        for formulation in ("letter", "text"):
            valid_bio = (50.0 if formulation == "letter" else 42.0) + bump
            for split, bio, hist in (
                ("valid", valid_bio, 40.0 + bump),
                ("test", test_scores[formulation] + bump, 45.0),
            ):
                base = {"cell": cell, "base": "s", "n_per_ability": 4, "epoch": 1.0}
                base |= {"split": split, "formulation": formulation}
                out += [
                    {**base, "ability": "biology", "score": bio},
                    {**base, "ability": "history", "score": hist},
                ]
    return pd.DataFrame(out).assign(cell_formulation="text")


def test_max_chooses_on_valid_and_reads_the_choice_on_every_split():
    table, _, notes = choose(split_rows(), None)
    got = set(zip(table["ability"], table["split"], table["formulation"]))
    # biology: letter wins on valid (51 vs 43 over both cells) though text wins on test;
    # history ties on valid: the cells' own (text); each read so on both splits
    assert got == {
        ("biology", "valid", "letter"),
        ("biology", "test", "letter"),
        ("history", "valid", "text"),
        ("history", "test", "text"),
    }
    assert len(table) == 8 and notes == ()


def test_max_never_reads_test_to_choose():
    chosen = []
    for test_scores in ({"letter": 30.0, "text": 60.0}, {"letter": 90.0, "text": 10.0}):
        rows = split_rows(test_scores)
        table, _, _ = choose(rows, None)
        chosen.append(set(zip(table["ability"], table["formulation"])))
        # test rows without a score at all: still the same choice
        rows.loc[rows["split"] == "test", "score"] = None
        table, _, _ = choose(rows, None)
        chosen.append(set(zip(table["ability"], table["formulation"])))
    assert all(c == chosen[0] for c in chosen)
    # asked to choose on test, it does read test: biology then reads text
    on_test = choose(split_rows(), None, on="test")[0]
    assert set(on_test.loc[on_test["ability"] == "biology", "formulation"]) == {"text"}


def test_without_valid_scores_the_cells_own_formulation_is_read_and_said():
    table, its, notes = choose(rows(), items())  # rows(): test only, cells trained in letter
    got = dict(zip(table["ability"], table["formulation"]))
    assert got == {"biology": "letter", "history": "letter", "code": "letter"}
    assert sorted(zip(its["ability"], its["formulation"])) == sorted(got.items())
    assert len(notes) == 1 and "biology, code, history" in notes[0] and "(letter)" in notes[0]


def test_one_formulation_and_mixed_cells():
    table, _, _ = choose(rows(), None, "letter")
    assert set(table["formulation"]) == {"letter"} and len(table) == 3
    with pytest.raises(ValueError, match="expected one of max, letter, text"):
        choose(rows(), None, "cloze")
    mixed = pd.concat([rows(), rows().assign(cell="b", cell_formulation="text")])
    with pytest.raises(ValueError, match="trained in the letter and text formulations"):
        choose(mixed, None)
    assert set(choose(mixed, None, cell_formulation="text")[0]["cell"]) == {"b"}
    assert "chosen on valid" in describe(rows(), "max") and "letter" in describe(rows(), "letter")


def test_comparison_lists_each_formulation_and_the_max():
    table = comparison(rows())
    bio = table[table["ability"] == "biology"].iloc[0]
    assert (bio["letter"], bio["text"], bio["max"]) == (25.0, 40.0, 40.0)
    assert comparison(rows()[rows()["formulation"] == "text"]).empty


def test_on_a_planted_world_max_never_reads_test_to_choose():
    """The planted world scored again in text: text is 5 points worse on valid and 5 better on
    test for every ability (the old per-split max read test in text). Chosen on valid, letter
    is read on both splits, whatever text scores on test."""
    import numpy as np

    from doit.analysis.synthetic import planted_world

    letter = planted_world("a", rng=0).table.assign(formulation="letter")
    shift = np.where(letter["split"] == "valid", -5.0, 5.0)
    for test_bonus in (5.0, 60.0, -60.0):
        text = letter.assign(
            formulation="text",
            score=(letter["score"] + np.where(shift > 0, test_bonus, shift)).clip(0, 100),
        )
        table, _, notes = choose(pd.concat([letter, text], ignore_index=True), None)
        assert set(table["formulation"]) == {"letter"} and notes == ()
        assert len(table) == len(letter)
