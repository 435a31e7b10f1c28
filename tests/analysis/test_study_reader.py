"""One reader of a study: on a study scored in two formulations (``eval_formulations: [letter,
text]``), the micro targets' scores and the curriculum's validation read the rows the analysis
reads (the max rule's, per-item rows following them), with and without per-item rows."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from doit.analysis import targets
from doit.analysis.curriculum import Options, make
from doit.analysis.curriculum import validate as val
from doit.analysis.curriculum.options import SETTINGS
from doit.analysis.pipeline import Analysis
from doit.analysis.sensitivity import interval
from doit.analysis.settings import Settings
from doit.analysis.synthetic import BASES, Curve, planted_study
from doit.grid.results import frame, write_shard

ABILITIES = ("biology", "history", "code")
CURVES = {k: Curve(a=-1.0 + 0.5 * i, b_data=0.4, b_size=0.0) for i, k in enumerate(ABILITIES)}
POINT = ["ability", "base", "n_per_ability", "k", "m", "score"]
BUDGET = 48


def both_formulations(rows: pd.DataFrame, items: pd.DataFrame | None):
    """Every row (and item) scored again in text, where each item's verdict is flipped: the
    text score is 100 - the letter score, so the max rule (on valid) takes letter for some
    abilities and text for others."""
    letter = rows.assign(formulation="letter", cell_formulation="letter")
    text = letter.assign(formulation="text", score=100 - letter["score"])
    both = pd.concat([letter, text], ignore_index=True)
    if items is None:
        return both, None
    letter_items = items.assign(formulation="letter")
    text_items = letter_items.assign(correct=~letter_items["correct"].astype(bool))
    return both, pd.concat([letter_items, text_items.assign(formulation="text")])


def write_study(folder, rows: pd.DataFrame, items: pd.DataFrame | None):
    for cell, block in rows.groupby("cell"):
        if items is not None:
            mine = items[items["cell"] == cell].reset_index(drop=True)
            write_shard(folder, cell, frame(mine.to_dict("records"), per_item=True), True)
        write_shard(folder, cell, frame(block.to_dict("records")))
    return folder


def planted(per_item: bool, ns=(4, 16)):
    return planted_study(
        CURVES, bases={"s": BASES["s"]}, ns=ns, n_items=50, epochs=(5.0,), per_item=per_item
    )[:2]


@pytest.mark.parametrize("per_item", [False, True], ids=["binomial", "paired"])
def test_micro_scores_are_the_analysis_scores_of_a_two_formulation_study(tmp_path, per_item):
    rows, items = planted(per_item)
    rows = rows[rows["split"] == "test"]  # the targets pool valid and test; the analysis: test
    study = write_study(tmp_path / "study", *both_formulations(rows, items))
    counts = targets.micro_scores(study, replicates=40)
    analysed = Analysis(str(study), Settings(rule="last", replicates=40)).counts
    assert (counts.points["m"] == 50).all()  # one formulation's 50 items, not both pooled
    pd.testing.assert_frame_equal(counts.points[POINT], analysed.points[POINT])
    np.testing.assert_array_equal(counts.k, analysed.k)
    # no valid rows to choose on: every ability is read in the cells' own formulation
    assert sorted(counts.points["score"]) == pytest.approx(sorted(rows["score"]))


def validation_study(folder, policies=("uniform", "marginal")):
    """A finished validation study of ``policies`` (one seed), valid and test, per-item rows,
    scored in letter and in text."""
    rng = np.random.default_rng(1)
    rows, items = [], []
    for policy in policies:
        cell = f"s-mix_{policy}-{BUDGET}-s0"
        for split in ("valid", "test"):
            for i, k in enumerate(ABILITIES):
                correct = rng.random(50) < 0.3 + 0.2 * i + 0.1 * (policy == "marginal")
                rows.append(
                    dict(
                        cell=cell,
                        base="s",
                        arch="llama",
                        params=BASES["s"],
                        construction="mix",
                        mix=f"{policy}-{BUDGET}",
                        n_total=BUDGET,
                        seed=0,
                        epoch=1.0,
                        step=2,
                        split=split,
                        ability=k,
                        score=100 * correct.mean(),
                        n_items=50,
                        chance=25.0,
                    )
                )
                items += [
                    dict(cell=cell, epoch=1.0, split=split, ability=k, type=k, idx=j, correct=c)
                    for j, c in enumerate(correct)
                ]
    return write_study(folder, *both_formulations(pd.DataFrame(rows), pd.DataFrame(items)))


def curriculum_of(source):
    options = Options(
        budget=BUDGET,
        policies=("marginal",),
        pools=dict.fromkeys(ABILITIES, 1000),
        settings=replace(SETTINGS, replicates=30),
    )
    return make(source, options)


def test_validation_reads_the_analysis_scores_of_a_two_formulation_study(tmp_path):
    rows, _ = planted(False, ns=(4, 16, 64))
    rows.to_csv(tmp_path / "source.csv", index=False)
    folder = validation_study(tmp_path / "validate")
    tables = val.compare(curriculum_of(tmp_path / "source.csv"), folder, replicates=40)
    valid = Analysis(str(folder), replace(SETTINGS, replicates=40)).counts
    for r in tables["calibration"].itertuples():
        i = valid.column(r.ability, mix=f"{r.policy}-{BUDGET}")
        score = float(valid.points["score"].iloc[i])
        lo, hi = interval(score, 100 * valid.k[:, i] / valid.m[:, i])
        assert (r.measured, r.measured_lo, r.measured_hi) == pytest.approx((score, lo, hi))
    test = Analysis(str(folder), Settings(rule="last", replicates=40)).counts.points.set_index(
        ["mix", "ability"]
    )
    diff = tables["differences"]
    diff = diff[diff["ability"].isin(ABILITIES)].set_index("ability")
    for k in ABILITIES:
        assert diff.loc[k, "score"] == pytest.approx(test.loc[(f"marginal-{BUDGET}", k), "score"])
        assert diff.loc[k, "uniform"] == pytest.approx(test.loc[(f"uniform-{BUDGET}", k), "score"])


def test_validation_reads_the_reused_uniform_cells_as_the_analysis_does(tmp_path):
    rows, items = planted(True, ns=(4, 16, 64))
    source = write_study(tmp_path / "source", *both_formulations(rows, items))
    folder = validation_study(tmp_path / "validate", policies=("marginal",))
    reused = {0: "s-n16-s0"}
    tables = val.compare(curriculum_of(source), folder, replicates=40, reused=reused)
    test = Analysis(str(source), Settings(rule="last", replicates=40)).counts.points
    test = test[test["n_per_ability"] == 16].set_index("ability")
    diff = tables["differences"]
    diff = diff[diff["ability"].isin(ABILITIES)].set_index("ability")
    for k in ABILITIES:
        assert diff.loc[k, "uniform"] == pytest.approx(test.loc[k, "score"])


def test_complexity_is_measured_before_the_analysis_is_built(tmp_path, tiny_base):
    """``features --base --data``: the Analysis is built once Complexity is known (it is not
    changed after construction), so features.csv carries it; it is measured on the split
    disjoint from the sensitivities' (valid for test, test for valid), and says so."""
    from doit.analysis.cli import main
    from tests.tiny import FIXTURE

    rows, _ = planted(False)
    rows.to_csv(tmp_path / "table.csv", index=False)
    for fitted, measured in (("test", "valid"), ("valid", "test")):
        out = tmp_path / f"out-{fitted}"
        argv = ["run", str(tmp_path / "table.csv"), "--out", str(out), "--replicates", "20"]
        argv += ["--rule", "last", "--split", fitted]
        assert main([*argv, "--base", str(tiny_base), "--data", str(FIXTURE)]) == 0
        features = pd.read_csv(out / "features.csv").set_index("ability")
        assert features.loc[list(ABILITIES), "complexity"].notna().all()
        assert features.loc[list(ABILITIES), "ranked_items"].gt(0).all()
        assert set(features["complexity_split"].dropna()) == {measured}
        report = (out / "report.md").read_text(encoding="utf-8")
        assert f"Complexity was measured on the {measured} items" in report
