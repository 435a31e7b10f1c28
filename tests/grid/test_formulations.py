"""A letter-trained cell scored in both formulations: both in the results table, and in the
analysis the max rule's formulation per ability, chosen on valid and read on every split."""

from __future__ import annotations

import pytest

from doit.analysis.formulation import max_choice
from doit.analysis.pipeline import Analysis
from doit.analysis.settings import Settings
from doit.grid import read_results
from doit.grid.plan import write_plan
from doit.grid.runner import run_study
from doit.grid.spec import load_grid
from tests.grid.conftest import grid_dict, write_grid

KEY = ["cell", "epoch", "split", "ability"]


@pytest.mark.slow
def test_a_letter_cell_scored_in_letter_and_text_reports_both_and_the_max(tmp_path, tiny_base):
    keys = {
        "data": {"per_ability": [1]},
        "eval_epochs": "last",
        "eval_formulations": ["letter", "text"],
    }
    study = tmp_path / "study"
    write_plan(load_grid(write_grid(tmp_path / "g.yaml", grid_dict(tiny_base, **keys))), study)
    assert set(run_study(study).values()) == {"done"}
    rows = read_results(study)
    assert set(rows["cell_formulation"]) == {"letter"}
    per_key = rows.groupby(KEY)["formulation"].agg(lambda f: "+".join(sorted(f)))
    assert set(per_key) == {"letter+text"}  # every checkpoint, split and ability: both
    assert list(study.glob("cells/*-n0001-*/eval/*/test.text.scores.json"))
    items = read_results(study, per_item=True)
    kinds = items.groupby("formulation")["answer_kind"].agg(set)
    assert "mc" in kinds["letter"] and "mc_text" in kinds["text"] and "mc" not in kinds["text"]

    a = Analysis(str(study), Settings(replicates=20))
    picked, _ = max_choice(rows)  # per ability, the higher valid mean: read on every split
    chosen = a.table.set_index(KEY)
    assert len(chosen) == len(rows.groupby(KEY))
    assert (a.table["formulation"] == a.table["ability"].map(picked)).all()
    valid = rows[rows["split"] == "valid"].pivot_table(
        index=["cell", "epoch", "ability"], columns="formulation", values="score"
    )
    means = valid.groupby(level="ability").mean()
    for ability, formulation in picked.items():  # the higher valid mean (ties: letter, the own)
        if ability not in means.index:  # a benchmark (test only): the cells' own formulation
            assert formulation == "letter"
            continue
        other = "text" if formulation == "letter" else "letter"
        assert means.loc[ability, formulation] >= means.loc[ability, other]
    mine = a.items.merge(
        a.table[[*KEY, "formulation"]], on=[*KEY, "formulation"], how="left", indicator=True
    )
    assert (mine["_merge"] == "both").all()  # the chosen rows' items, no other formulation's
    table = a.formulations
    assert {"letter", "text", "max"} <= set(table.columns) and len(table)
    assert (table["max"] >= table[["letter", "text"]].max(axis=1) - 1e-9).all()
    assert (
        Analysis(str(study), Settings(replicates=20, formulation="text"))
        .table["formulation"]
        .eq("text")
        .all()
    )

    # the text scorings judged again under each normalisation, from the stored predictions
    from doit.analysis.formulation import compare_norms
    from doit.eval.kinds import DEFAULT_NORM
    from doit.grid import rescore

    again, verdicts = rescore(study, DEFAULT_NORM, ("valid",))
    text = rows[(rows["formulation"] == "text") & (rows["split"] == "valid")]
    assert again.set_index(KEY)["score"].equals(text.set_index(KEY)["score"])
    assert len(verdicts) == len(
        items[(items["formulation"] == "text") & (items["split"] == "valid")]
    )
    norms = compare_norms(study, replicates=50).set_index(["ability", "compared"])
    assert {"token", "char", "pmi", "token - char", "char - pmi"} <= set(norms.loc["all"].index)
    d = norms.loc[("all", "char"), "value"] - norms.loc[("all", "pmi"), "value"]
    assert abs(norms.loc[("all", "char - pmi"), "value"] - d) < 1e-9
