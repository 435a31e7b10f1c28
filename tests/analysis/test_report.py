"""`python -m doit.analysis run` end to end on a small synthetic study: every output, every
figure with at least two distinct non-chance values per panel, an HTML report with its figures
embedded, and a table missing a column refused by name."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from doit.analysis import plots, summary
from doit.analysis import synthetic as syn
from doit.analysis.cli import main
from doit.analysis.pipeline import Analysis
from doit.analysis.settings import Settings
from doit.analysis.synthetic import BASES, Curve, planted_study
from doit.grid.results import write_shard

CURVES = {"biology": Curve(), "code": Curve(a=-2, b_data=0.6), "ethics": Curve(a=-1, b_data=0.05)}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("study")
    table, items, _ = planted_study(CURVES, bases=BASES, n_items=60, loo_ns=(64,), rng=0)
    for cell, df in table.groupby("cell"):
        write_shard(root, cell, df)
    for cell, df in items.groupby("cell"):
        write_shard(root, cell, df, per_item=True)
    feats = root / "features.csv"
    pd.DataFrame({"ability": list(CURVES), "complexity": [0.2, 0.5, 0.9]}).to_csv(
        feats, index=False
    )
    return root, feats


def test_run_writes_every_output_and_a_self_contained_report(folder, tmp_path, capsys):
    root, feats = folder
    out = tmp_path / "out"
    assert (
        main(["run", str(root), "--out", str(out), "--replicates", "100", "--features", str(feats)])
        == 0
    )
    for name in ("selected", "fits", "sensitivity", "predictions", "features"):
        df = pd.read_csv(out / f"{name}.csv")
        assert len(df) and (df["rule"] == "study").all(), name
    sens = pd.read_csv(out / "sensitivity.csv")
    assert list(sens.columns[:14]) == [
        "ability",
        "data_sensitivity",
        "data_sensitivity_lo",
        "data_sensitivity_hi",
        "size_sensitivity",
        "size_sensitivity_lo",
        "size_sensitivity_hi",
        "saturation_n",
        "saturation_n_lo",
        "saturation_n_hi",
        "saturation_share",
        "mde_data",
        "mde_size",
        "group",
    ]
    for name in plots.FIGURES:
        assert (out / "figures" / f"{name}.png").stat().st_size > 1000
        assert (out / "figures" / f"{name}.svg").read_text().lstrip().startswith("<?xml")
    page = (out / "report.html").read_text()
    assert page.count("data:image/png;base64,") == len(plots.FIGURES) and 'src="figures' not in page
    md = (out / "report.md").read_text()
    assert "paired item bootstrap" in md and "Bhagia" in md and "published_group" in md
    assert "report.html" in capsys.readouterr().out


def classes(line: str) -> dict[str, list[str]]:
    """``responsive: a, b; harmed: c`` -> {"responsive": ["a", "b"], "harmed": ["c"]}."""
    return {c: names.split(", ") for c, names in (p.split(": ") for p in line.split("; "))}


def test_the_report_and_the_summary_show_each_abilitys_class_per_axis(tmp_path):
    """A clear data effect beside an undecided size effect keeps its data class in what the user
    reads (its group is undetermined), and a harmful data effect is called harmed (the planted
    world of design b: 3 bases x 8, 400 items, 2 seeds)."""
    world = syn.planted_world("b", {"biology": "smooth", "code": "harmful"}, seed_sd=0.0, rng=22)
    root, out = world.write(tmp_path / "study"), tmp_path / "out"
    assert main(["run", str(root), "--out", str(out), "--replicates", "100", "--rule", "last"]) == 0
    md = (out / "report.md").read_text()
    lines = md.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("| ability | data sens"))
    header = lines[at].split(" | ")
    cells = {
        r[0][2:]: dict(zip(header, r)) for r in (x.split(" | ") for x in lines[at + 2 : at + 4])
    }
    assert cells["biology"]["data class"] == "responsive"
    assert cells["biology"]["size class"] == "undetermined"
    assert cells["code"]["data class"] == "harmed" and cells["code"]["group"] == "harmed_by_data"
    assert "Data axis: responsive: biology; harmed: code." in md
    a = Analysis(str(root), Settings(replicates=100, rule="last"))
    printed = summary.summary_lines(a, None, 60, out / "report.html")
    assert "data classes: responsive: biology; harmed: code" in printed
    size = next(line for line in printed if line.startswith("size classes: "))
    assert classes(size.removeprefix("size classes: "))["undetermined"] == ["biology"]


def values(ax) -> set:
    """Distinct plotted y values (lines other than the chance line, markers, images)."""
    vals = set()
    for line in ax.get_lines():
        if line.get_gid() != "chance":
            vals |= {round(float(v), 6) for v in np.asarray(line.get_ydata(), float)}
    for coll in ax.collections:
        vals |= {round(float(v), 6) for v in np.asarray(coll.get_offsets())[:, 1:].ravel()}
    for im in ax.get_images():
        vals |= {round(float(v), 6) for v in np.asarray(im.get_array()).ravel()}
    return vals


def test_every_figure_panel_shows_at_least_two_distinct_non_chance_values(folder):
    root, feats = folder
    a = Analysis(str(root), Settings(replicates=50), features_csv=str(feats))
    for name in plots.FIGURES:
        fig = getattr(plots, name)(a)
        panels = [ax for ax in fig.axes if ax.get_visible() and ax.get_label() != "<colorbar>"]
        assert panels, name
        for ax in panels:
            chance = {
                round(float(y), 6)
                for ln in ax.get_lines()
                if ln.get_gid() == "chance"
                for y in ln.get_ydata()
            }
            assert len(values(ax) - chance) >= 2, (name, ax.get_title())


def test_a_table_missing_a_required_column_is_refused_by_name(tmp_path, capsys):
    table, _, _ = planted_study({"biology": Curve()}, per_item=False)
    table.drop(columns=["n_items"]).to_csv(tmp_path / "t.csv", index=False)
    assert main(["fit", str(tmp_path / "t.csv"), "--out", str(tmp_path / "o")]) == 2
    assert "n_items" in capsys.readouterr().err


def test_a_formulation_chosen_on_the_judged_split_is_said_and_the_default_is_silent(folder):
    root, _ = folder
    said = "the split the fits are judged on"
    chosen_on_test = Analysis(str(root), Settings(replicates=20, formulation_split="test"))
    assert any(said in line for line in chosen_on_test.limits)
    default = Analysis(str(root), Settings(replicates=20))
    assert not any(said in line for line in default.limits)
    # the study read once is the study the analysis reads
    again = replace(default, study=default.rows)
    assert again.rows is default.rows and again.table.equals(default.table)
