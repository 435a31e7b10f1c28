"""``doit analysis curriculum``: what it writes, and every refusal as one line, exit 2, nothing
written; ``doit analysis run --budget`` carries the curriculum section."""

from __future__ import annotations

import json
from dataclasses import replace

import pandas as pd
import pytest

from doit.analysis.cli import main
from doit.analysis.curriculum import Options, make
from doit.analysis.curriculum.core import COLUMNS
from doit.analysis.curriculum.options import SETTINGS
from doit.analysis.curriculum.regression import lightgbm_module
from doit.analysis.synthetic import BASES, Curve, planted_study
from doit.data import abilities as ab
from doit.data.mixes import load_mix, resolve_counts
from tests.analysis.studies import mix_study

KEYS = ab.ABILITY_KEYS
POOLS = ",".join(f"{k}=1000" for k in KEYS)


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """A small planted study with leave-one-out cells, and the same without them or mixes."""
    tmp = tmp_path_factory.mktemp("cli")
    table = mix_study(tokens=True)
    full, plain = tmp / "full.csv", tmp / "plain.csv"
    table.to_csv(full, index=False)
    keep = table["excluded_ability"].isna() & (table["construction"] != "mix")
    table[keep].to_csv(plain, index=False)
    return full, plain


def test_writes_mixes_table_figure_and_report(tables, tmp_path, capsys):
    out = tmp_path / "out"
    rc = main(
        [
            "curriculum",
            str(tables[0]),
            "--budget",
            "640",
            "--policy",
            "all",
            "--out",
            str(out),
            "--pools",
            POOLS,
            "--replicates",
            "30",
        ]
    )
    assert rc == 0
    printed = capsys.readouterr().out
    assert "marginal" in printed and "note: transfer term g_a" in printed
    csv = pd.read_csv(out / "curriculum.csv")
    assert list(csv.columns) == COLUMNS
    assert set(csv["policy"]) == {
        "uniform",
        "reconstruct",
        "maximum",
        "marginal",
        "regression",
        "dmt",
        "staged",
    }
    sums = csv[csv["ability"] != "macro"].groupby("policy")["n"].sum()
    assert (sums.drop("maximum") == 640).all()
    macro = csv[csv["ability"] == "macro"].set_index("policy")
    assert (macro["predicted_lo"] <= macro["predicted"]).all()
    assert (macro["predicted"] <= macro["predicted_hi"]).all()
    assert (csv["tokens"] == 10 * csv["n"]).all()
    for policy in ("marginal", "regression"):
        spec = load_mix(out / "mixes" / f"{policy}-640.yaml")
        counts = csv[(csv["policy"] == policy) & (csv["ability"] != "macro")]
        assert resolve_counts(spec, dict.fromkeys(KEYS, 1000)) == {
            r.ability: r.n for r in counts.itertuples() if r.n > 0
        }
    by = {
        p: dict(zip(g["ability"], g["n"]))
        for p, g in csv[csv["ability"] != "macro"].groupby("policy")
    }
    for policy, counted in (("dmt", "uniform"), ("staged", "marginal")):  # their counts, staged
        spec = load_mix(out / "mixes" / f"{policy}-640.yaml")
        first, second = (resolve_counts(st.spec, dict.fromkeys(KEYS, 1000)) for st in spec.stages)
        assert not set(first) & set(second) and {**first, **second} == {
            k: n for k, n in by[counted].items() if n > 0
        }
        assert spec.stages[1].replay == round(sum(first.values()) / 16)
    assert set(load_mix(out / "mixes" / "dmt-640.yaml").stages[0].spec.counts) == {"math", "code"}
    for name in ("transfer.csv", "regression.csv", "figures/curriculum.png", "curriculum.md"):
        assert (out / name).is_file(), name
    assert "Curriculum: 640 items for s" in (out / "curriculum.md").read_text()


def test_budget_in_tokens_spends_at_most_the_budget(tables):
    options = Options(
        budget=6400,
        unit="tokens",
        policies=("reconstruct", "marginal"),
        pools=dict.fromkeys(KEYS, 1000),
        settings=replace(SETTINGS, replicates=20),
    )
    table = make(tables[0], options).table
    macro = table[table["ability"] == "macro"].set_index("policy")
    assert (macro["tokens"] <= 6400).all() and (macro["tokens"] > 6400 * 0.95).all()


REFUSALS = [
    ("full", ["--budget", "5"], "below the floors' sum"),
    ("full", ["--budget", "20000"], "above what the pools"),
    ("full", ["--budget", "640", "--base", "xl"], "not in the study"),
    ("plain", ["--budget", "640", "--transfer", "on"], "data.loo"),
    ("plain", ["--budget", "640", "--policy", "regression"], "data.random_mixes"),
    ("full", ["--budget", "640", "--validate"], "needs a study folder"),
    ("full", ["--budget", "640", "--rule", "study"], "use rule 'last'"),
    ("full", ["--budget", "640", "--floors", "ethics=2000"], "above its pool or cap"),
    ("full", ["--budget", "640", "--policy", "greedy"], "expected one of"),
    (
        "full",
        ["--budget", "640", "--unit", "tokens", "--policy", "regression", "--model", "lightgbm"],
        "lightgbm" if lightgbm_module() is None else "not supported",
    ),
]


@pytest.mark.parametrize("which,args,says", REFUSALS, ids=[r[2] for r in REFUSALS])
def test_refusals_are_one_line_exit_2_and_write_nothing(
    tables, tmp_path, capsys, which, args, says
):
    out = tmp_path / "never"
    source = tables[0] if which == "full" else tables[1]
    rc = main(
        [
            "curriculum",
            str(source),
            "--out",
            str(out),
            "--pools",
            POOLS,
            "--replicates",
            "20",
            *args,
        ]
    )
    err = capsys.readouterr().err.strip()
    assert rc == 2 and says in err and len(err.splitlines()) == 1, err
    assert not out.exists()


def test_no_pools_is_a_refusal(tables, tmp_path, capsys):
    rc = main(["curriculum", str(tables[0]), "--budget", "640", "--out", str(tmp_path / "x")])
    assert rc == 2 and "--pools" in capsys.readouterr().err and not (tmp_path / "x").exists()


@pytest.mark.slow
def test_analysis_run_with_a_budget_has_the_curriculum_section(tmp_path):
    curves = {
        "biology": Curve(a=-2.5, b_data=0.6),
        "code": Curve(a=-2.0, b_data=0.3),
        "ethics": Curve(a=-1.0, b_data=0.0, b_size=0.0),
    }
    table, _, _ = planted_study(
        curves,
        bases={"s": BASES["s"]},
        ns=(4, 16, 64),
        n_items=100,
        epochs=(5.0,),
        per_item=False,
        rng=0,
    )
    table.to_csv(tmp_path / "three.csv", index=False)
    out, data = tmp_path / "analysis", tmp_path / "corpus"
    _write_corpus(data)  # pools come from --data: a corpus of 100 items per ability
    assert (
        main(
            [
                "run",
                str(tmp_path / "three.csv"),
                "--out",
                str(out),
                "--replicates",
                "20",
                "--budget",
                "192",
                "--data",
                str(data),
                "--rule",
                "last",
                "--split",
                "valid",
            ]
        )
        == 0
    )
    text = (out / "report.md").read_text()
    assert "## Curriculum: 192 items for s" in text and (out / "figures/curriculum.png").is_file()
    assert "regression" not in text.split("## Curriculum")[1].split("###")[0]  # no mix cells


def _write_corpus(root):
    """A corpus whose `1000` pool holds 100 items of every ability (pool sizes only)."""
    from tests.tiny import FIXTURE

    (root / "curated" / "1000").mkdir(parents=True)
    for path in sorted((FIXTURE / "curated" / "1000").glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
        lines = [json.dumps({**record, "idx": i}, ensure_ascii=False) for i in range(100)]
        (root / "curated" / "1000" / path.name).write_text("\n".join(lines) + "\n", "utf-8")


def axis_table(plain, folder):
    """The plain study trained twice, in letter and in text (a grid's formulation axis): the
    text cells' scores are the letter cells' less 5 points."""
    letter = pd.read_csv(plain).assign(formulation="letter", cell_formulation="letter")
    text = letter.assign(
        cell=letter["cell"] + "-text",
        formulation="text",
        cell_formulation="text",
        score=(letter["score"] - 5).clip(lower=0),
    )
    folder.mkdir()
    pd.concat([letter, text]).to_csv(folder / "axis.csv", index=False)
    text.to_csv(folder / "text.csv", index=False)
    return folder / "axis.csv", folder / "text.csv"


@pytest.mark.slow  # > 10 s: test-fast stays under 4 minutes
def test_curriculum_of_a_formulation_axis_reads_the_cells_asked_for(tables, tmp_path):
    axis, text = axis_table(tables[1], tmp_path / "tables")
    flags = ["--budget", "640", "--pools", POOLS, "--replicates", "20"]
    out = tmp_path / "out"
    assert (
        main(["curriculum", str(axis), "--cell-formulation", "text", "--out", str(out), *flags])
        == 0
    )
    assert main(["curriculum", str(text), "--out", str(tmp_path / "alone"), *flags]) == 0
    got, alone = (pd.read_csv(p / "curriculum.csv") for p in (out, tmp_path / "alone"))
    pd.testing.assert_frame_equal(got, alone)  # the text cells' curriculum, as if alone


@pytest.mark.slow  # > 10 s: test-fast stays under 4 minutes
def test_analysis_run_with_a_budget_on_a_formulation_axis(tables, tmp_path):
    axis, _ = axis_table(tables[1], tmp_path / "tables")
    out, data = tmp_path / "analysis", tmp_path / "corpus"
    _write_corpus(data)
    argv = ["run", str(axis), "--out", str(out), "--replicates", "20", "--budget", "192"]
    argv += ["--data", str(data), "--cell-formulation", "text"]
    assert main(argv) == 0
    text = (out / "report.md").read_text()
    assert (
        "## Curriculum: 192 items for s" in text
        and "trained (an untuned base: rendered) in text" in text
    )


def test_the_pool_flag_keeps_its_old_spelling_as_a_deprecated_alias():
    from doit.analysis.cli import build_parser

    parser = build_parser()
    base = ["curriculum", "study.csv", "--budget", "10", "--out", "x"]
    assert parser.parse_args([*base, "--pool", "full"]).pool == "full"
    assert parser.parse_args([*base, "--source", "full"]).pool == "full"  # the old spelling
    assert parser.parse_args(base).pool == "1000"
    (curriculum,) = [
        a
        for a in parser._subparsers._group_actions[0].choices.values()
        if a.prog.endswith("curriculum")
    ]
    helps = {a.dest: a.help for a in curriculum._actions}
    assert "--source is its old spelling, deprecated" in helps["pool"]


def test_regressions_trees_and_the_curves_may_have_different_replicate_counts(tables):
    """The trees bootstrap TREE_REPLICATES (50) fits whatever --replicates says; with more (here
    60) the baseline's arm noise is drawn per replicate count (it was drawn once, at the
    curves' count, and failed to broadcast)."""
    if lightgbm_module() is None:
        pytest.fail("lightgbm is part of `make`'s install (the mixing extra)")
    from doit.analysis.curriculum.regression import TREE_REPLICATES

    options = Options(
        budget=640,
        policies=("marginal", "regression"),
        model="lightgbm",
        pools=dict.fromkeys(KEYS, 1000),
        settings=replace(SETTINGS, replicates=TREE_REPLICATES + 10),
    )
    table = make(tables[0], options).table
    macro = table[table["ability"] == "macro"].set_index("policy")
    assert {"uniform", "marginal", "regression"} <= set(macro.index)
    assert (macro["gain_lo"] <= macro["gain"]).all() and (macro["gain"] <= macro["gain_hi"]).all()
