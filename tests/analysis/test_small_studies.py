"""Small, partial and degenerate studies: every subcommand finishes (exit 0, no traceback), writes
what it can, and says plainly what it could not compute and why."""

import numpy as np
import pandas as pd
import pytest

from doit.analysis import plots
from doit.analysis.cli import STEPS, main
from doit.analysis.pipeline import Analysis
from doit.analysis.settings import Settings
from doit.analysis.study import StudyRows
from doit.analysis.synthetic import BASES, Curve, planted_study
from doit.grid.results import write_shard
from tests.analysis.test_report import values

N_ABILITIES = 4  # few panels keep the figures (most of the time) fast


def curves() -> dict:
    """An ordinary ability, math (chance 0, every score exactly 0), role_play (every score
    exactly 100) and a C-Eval set."""
    return {
        "biology": Curve(),
        "math": Curve(chance=0.0, a=-14),
        "role_play": Curve(a=14),
        "ceval_physician": Curve(b_data=0.0, b_size=0.0),
    }


@pytest.fixture(scope="module")
def demo():
    """The `make demo` shape: 2 bases x (n = 0, 4, 64), 1 seed, one epoch (3, < 5: fallback)."""
    with np.errstate(invalid="ignore"):
        table, items, _ = planted_study(
            curves(),
            bases={"s": BASES["s"], "l": BASES["l"]},
            ns=(4, 64),
            n_items=40,
            epochs=(3.0,),
            rng=1,
        )
    return table, items


def shard(root, table, items=None):
    for cell, df in table.groupby("cell"):
        write_shard(root, cell, df)
    if items is not None:
        for cell, df in items[items["cell"].isin(table["cell"])].groupby("cell"):
            write_shard(root, cell, df, per_item=True)
    return root


def run_all(root, tmp_path, capsys, steps=("run",)) -> tuple:
    """The subcommands ``steps`` (``run``: all of them; plot and report only redo run's figures
    and report) into their own folders; (the `run` folder, run's stdout)."""
    for step in steps:
        out = tmp_path / f"out-{step}"
        assert main([step, str(root), "--out", str(out), "--replicates", "30"]) == 0, step
        text = capsys.readouterr()
        assert "Traceback" not in text.err, step
        if step == "run":
            printed = text.out
    out = tmp_path / "out-run"
    for name in ("selected", "fits", "sensitivity", "predictions", "features"):
        pd.read_csv(out / f"{name}.csv")  # header at least, never an empty file
    for name in plots.FIGURES:
        assert (out / "figures" / f"{name}.png").stat().st_size > 1000
    return out, printed


def test_demo_shaped_study_fits_two_point_series_and_draws_the_n0_cells(demo, tmp_path, capsys):
    root = shard(tmp_path / "study", *demo)
    out, printed = run_all(root, tmp_path, capsys)
    fits = pd.read_csv(out / "fits.csv")
    data = fits[fits["axis"] == "data"]
    assert (
        set(data["points"]) == {2} and len(data) == N_ABILITIES * 2 * 2
    )  # abilities x bases x forms
    sens = pd.read_csv(out / "sensitivity.csv").set_index("ability")
    assert sens["data_sensitivity"].notna().all() and sens["size_sensitivity"].notna().all()
    for stuck in ("math", "role_play"):  # scores only 0 / 100: degenerate CI, not "resistant"
        assert sens.loc[stuck, "group"] == "undetermined"
        assert "no item variance" in sens.loc[stuck, "note"]
    assert pd.read_csv(out / "predictions.csv").empty
    md = (out / "report.md").read_text()
    assert "prediction needs >= 3 bases" in md and "fell back to their last epoch" in md
    assert "each is its base's data curves' floor" in md and "note: " in printed
    a = Analysis(str(root), Settings(replicates=30))
    for name in ("scaling_data", "macro", "heatmap"):
        fig = getattr(plots, name)(a)
        panels = [ax for ax in fig.axes if ax.get_visible() and ax.get_label() != "<colorbar>"]
        for ax in panels:
            if ax.get_title() in ("math", "role_play"):
                continue
            chance = {
                round(float(y), 6)
                for ln in ax.get_lines()
                if ln.get_gid() == "chance"
                for y in ln.get_ydata()
            }
            assert len(values(ax) - chance) >= 3, (name, ax.get_title())  # n = 0, 4, 64
        plots.plt.close(fig)


def test_without_per_item_rows_the_report_says_binomial(demo, tmp_path, capsys):
    table, _ = demo
    root = shard(tmp_path / "study", table[table["base"] == "s"])
    out, _ = run_all(root, tmp_path, capsys)
    md = (out / "report.md").read_text()
    assert "no per-item rows" in md and "size_sensitivity need >= 2 bases" in md
    sens = pd.read_csv(out / "sensitivity.csv")
    assert sens["size_sensitivity"].isna().all() and sens["data_sensitivity"].notna().all()


def test_partial_per_item_rows_fall_back_to_binomial(demo, tmp_path, capsys):
    table, items = demo
    root = shard(tmp_path / "study", table, items[items["cell"] != "l-n64-s0"])
    out, _ = run_all(root, tmp_path, capsys)
    assert "per-item rows missing for 1 of the selected cells" in (out / "report.md").read_text()


def test_a_single_fine_tuned_cell(demo, tmp_path, capsys):
    table, items = demo
    root = shard(tmp_path / "study", table[table["cell"] == "s-n4-s0"], items)
    out, _ = run_all(root, tmp_path, capsys, [s for s in STEPS if s not in ("plot", "report")])
    assert pd.read_csv(out / "fits.csv").empty and pd.read_csv(out / "predictions.csv").empty
    sens = pd.read_csv(out / "sensitivity.csv")
    assert (
        len(sens) == N_ABILITIES and sens["note"].str.contains("2 distinct n > 0 per base: 1").all()
    )
    feats = pd.read_csv(out / "features.csv")
    assert feats["transference"].isna().all()
    assert feats["transference_note"].str.contains("no untuned base").all()
    md = (out / "report.md").read_text()
    assert "data fits need >= 2 distinct n > 0 per base: base s has 1 (n = 4)" in md


def test_only_untuned_base_cells(demo, tmp_path, capsys):
    table, items = demo
    root = shard(tmp_path / "study", table[table["construction"] == "base"], items)
    out, _ = run_all(root, tmp_path, capsys)
    md = (out / "report.md").read_text()
    assert "No fine-tuned uniform curated cells" in md
    assert len(pd.read_csv(out / "selected.csv")) == 2 * N_ABILITIES


def test_one_base_three_n_predicts_the_largest_n(tmp_path, capsys):
    with np.errstate(invalid="ignore"):
        table, items, _ = planted_study(
            curves(), bases={"s": BASES["s"]}, ns=(4, 16, 64), n_items=40, epochs=(3.0,), rng=2
        )
    root = shard(tmp_path / "study", table, items)
    out, _ = run_all(root, tmp_path, capsys)
    pred = pd.read_csv(out / "predictions.csv")
    assert set(pred["holdout"]) == {"largest_n"} and len(pred) == N_ABILITIES
    assert np.isfinite(pred["predicted"]).all()


def test_fits_never_take_the_log_of_n0():
    """The untuned base cells (n = 0) stay out of every fit: no series has an x of 0."""
    with np.errstate(invalid="ignore"):
        table, items, _ = planted_study(
            {"math": Curve(chance=0.0)},
            bases={"s": BASES["s"]},
            ns=(4, 64),
            n_items=20,
            epochs=(3.0,),
        )
    a = Analysis.__new__(Analysis)  # the reader's rows given, not read from a folder
    a.__dict__.update(
        source="x", settings=Settings(replicates=20), rows=StudyRows(table, items, table, ())
    )
    with np.errstate(divide="raise", invalid="raise"):
        fits = list(a.curves.data.values())
    assert fits and all((f.x > 0).all() for f in fits)
    assert (a.counts.points["construction"] == "base").any()
