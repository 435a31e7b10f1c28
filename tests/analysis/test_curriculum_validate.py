"""``--validate``: the validation grid (the equal-budget policies on the target, >= 2 seeds, the
study's recipe), the comparison with uniform on test (paired item bootstrap), and a run end to
end on a tiny base."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from doit.analysis.cli import main
from doit.analysis.curriculum import CurriculumError, Options, make
from doit.analysis.curriculum import validate as val
from doit.analysis.curriculum.options import SETTINGS
from doit.analysis.synthetic import Curve, planted_study
from doit.data import abilities as ab
from doit.grid import MixStudyError, mix_grid, reusable_cells
from doit.grid.plan import expand, write_plan
from doit.grid.results import frame, write_shard
from doit.grid.spec import load_grid
from doit.testing import tiny_grid, write_grid
from tests.tiny import FIXTURE, REPO

MICRO = REPO / "recipes" / "configs" / "sft" / "micro" / "full.yaml"
BUDGET = 12  # the fixture corpus holds 16 train items


@pytest.fixture(scope="module")
def study(tmp_path_factory, tiny_base):
    """A planned tiny study (the fixture corpus, a random base) whose results are planted: ten
    abilities over n = 1, 2, 3 on the base `tiny`."""
    tmp = tmp_path_factory.mktemp("validate")
    sft = {
        "config": str(MICRO),
        "overrides": {
            "num_train_epochs": 1,
            "min_steps": 0,
            "logging_steps": 1,
            "disable_tqdm": True,
        },
    }
    raw = tiny_grid(
        tiny_base, FIXTURE, MICRO, sft=sft, eval_epochs="last", data={"per_ability": [1]}
    )
    folder = tmp / "study"
    write_plan(load_grid(write_grid(tmp / "grid.yaml", raw)), folder)
    curves = {
        k: Curve(a=-1.5, b_data=0.8 if i % 2 else 0.1, b_size=0.0)
        for i, k in enumerate(ab.ABILITY_KEYS)
    }
    table, _, _ = planted_study(
        curves,
        bases={"tiny": 1000},
        ns=(1, 2, 3),
        n_items=100,
        epochs=(5.0,),
        per_item=False,
        rng=0,
    )
    for cell, rows in table.groupby("cell"):
        write_shard(folder, cell, rows.reset_index(drop=True))
    return folder


@pytest.fixture(scope="module")
def result(study):
    return make(
        study,
        Options(
            budget=BUDGET,
            policies=("reconstruct", "maximum", "marginal"),
            settings=replace(SETTINGS, replicates=30),
        ),
    )


def test_the_validation_grid_trains_the_equal_budget_policies_on_the_target(result, tmp_path):
    mapping = val.validation_grid(result, tmp_path, seeds=(0, 1))
    assert [b["name"] for b in mapping["bases"]] == ["tiny"] and mapping["seed"] == [0, 1]
    names = [p.rsplit("/", 1)[1] for p in mapping["data"]["mix"]]
    assert names == [f"{p}-{BUDGET}.yaml" for p in ("uniform", "reconstruct", "marginal")]
    assert mapping["sft"]["overrides"]["num_train_epochs"] == 1  # the study's recipe
    from doit.analysis.curriculum import write

    write(result, tmp_path)
    cells = expand(load_grid(write_grid(tmp_path / "v.yaml", mapping)))
    sft = [c for c in cells if c.kind == "sft"]
    assert len(sft) == 3 * 2 and {c.mix for c in sft} == {n[:-5] for n in names}
    with pytest.raises(CurriculumError, match="training seeds"):
        val.validation_grid(result, tmp_path, seeds=())


def test_uniform_reuses_the_studys_own_cells_when_its_draw_is_the_same(study, tmp_path):
    """At 10 items uniform gives every ability n = 1: the study's planned n = 1 cell (seed 0)
    holds that draw, so only the other policies are trained, for seed 0; seed 1 has no such
    cell, so uniform is trained there."""
    import shutil

    from doit.grid.plan import read_plan
    from doit.grid.results import read_results

    folder = tmp_path / "study"
    shutil.copytree(study, folder)
    (planned,) = [
        c.id
        for c in read_plan(folder).cells
        if c.kind == "sft" and c.n_per_ability == 1 and c.excluded_ability is None
    ]
    rows = read_results(folder)
    rows = rows[rows["cell"] == "tiny-n1-s0"].assign(cell=planned).reset_index(drop=True)
    write_shard(folder, planned, rows)
    got = make(
        folder,
        Options(budget=10, policies=("marginal",), settings=replace(SETTINGS, replicates=30)),
    )
    uniform = got.allocations["uniform"].counts
    assert set(uniform.values()) == {1}
    assert reusable_cells(folder, "tiny", uniform, "1000", (0,)) == {0: planned}
    names = [
        m.rsplit("/", 1)[1] for m in val.validation_grid(got, tmp_path, seeds=(0,))["data"]["mix"]
    ]
    assert names == ["marginal-10.yaml"]
    assert reusable_cells(folder, "tiny", uniform, "1000", (0, 1)) is None
    names = [
        m.rsplit("/", 1)[1] for m in val.validation_grid(got, tmp_path, seeds=(0, 1))["data"]["mix"]
    ]
    assert names == ["uniform-10.yaml", "marginal-10.yaml"]
    # another pool, a cell not among the finished ones, unequal counts: nothing stands for it
    assert reusable_cells(folder, "tiny", uniform, "full", (0,)) is None
    assert reusable_cells(folder, "tiny", uniform, "1000", (0,), among=set()) is None
    assert reusable_cells(folder, "tiny", {**uniform, "math": 2}, "1000", (0,)) is None


def test_the_grid_refuses_mixes_it_cannot_train_and_the_curriculum_says_so(study, tmp_path):
    with pytest.raises(MixStudyError, match="needs a study folder"):
        mix_grid(tmp_path, "tiny", [], (0,), "x")
    with pytest.raises(MixStudyError, match="nobody is not one of the study's bases"):
        mix_grid(study, "nobody", [], (0,), "x")
    mapping, reused = mix_grid(study, "tiny", [tmp_path / "a.yaml"], (1, 0, 1), "x")
    assert mapping["data"] == {"mix": [str((tmp_path / "a.yaml").resolve())]}
    assert mapping["seed"] == [0, 1] and mapping["name"].endswith("-x") and reused is None


def _planted_validation(folder, better: float):
    """A finished validation study: uniform and marginal, 2 seeds, valid and test (per-item
    rows), marginal ``better`` points ahead on biology's test items."""
    rng = np.random.default_rng(0)
    for policy in ("uniform", "marginal"):
        for seed in (0, 1):
            cell = f"tiny-mix_{policy}-{BUDGET}-s{seed}"
            rows, items = [], []
            for split in ("valid", "test"):
                for k in (*ab.ABILITY_KEYS, "ceval_physician"):
                    if split == "valid" and k.startswith("ceval"):
                        continue
                    p = 0.5 + (better / 100 if policy == "marginal" and k == "biology" else 0)
                    row, mine = planted_rows(cell, policy, seed, split, k, rng.random(100) < p)
                    rows.append(row)
                    items += mine
            write_shard(folder, cell, frame(items, per_item=True), per_item=True)
            write_shard(folder, cell, frame(rows))


def planted_rows(cell, policy, seed, split, ability, correct, step=2, **extra):
    """One validation cell's results row and per-item rows for ``ability``'s outcomes
    ``correct`` (``extra``: columns both carry, such as ``stage``)."""
    row = dict(
        cell=cell,
        base="tiny",
        arch="llama",
        params=1000,
        construction="mix",
        mix=f"{policy}-{BUDGET}",
        n_total=BUDGET,
        seed=seed,
        epoch=1.0,
        step=step,
        split=split,
        ability=ability,
        score=100 * correct.mean(),
        n_items=100,
        chance=25.0,
        **extra,
    )
    items = [
        dict(
            cell=cell,
            epoch=1.0,
            split=split,
            ability=ability,
            type=ability,
            idx=i,
            answer_kind="mc",
            correct=bool(c),
            **extra,
        )
        for i, c in enumerate(correct)
    ]
    return row, items


def test_the_comparison_is_paired_on_test_and_calibrated_on_valid(result, tmp_path):
    _planted_validation(tmp_path, better=30)
    tables = val.compare(result, tmp_path, replicates=200)
    diff = tables["differences"].set_index(["policy", "split", "ability"])
    bio = diff.loc[("marginal", "test", "biology")]
    assert 15 < bio["diff"] < 45 and bio["diff_lo"] > 0  # the planted +30, its CI above 0
    assert bio["method"] == "paired item bootstrap"
    assert ("marginal", "test", "ceval_physician") in diff.index  # the OOD sets too
    macro = diff.loc[("marginal", "test", "macro")]
    assert macro["diff"] == pytest.approx(
        diff.loc[("marginal", "test", list(ab.ABILITY_KEYS)), "diff"].mean()
    )
    cal = tables["calibration"]
    assert set(cal["policy"]) == {"uniform", "marginal"} and len(cal) == 20
    assert ((cal["measured"] - cal["predicted"]) == cal["error"]).all()
    md = "\n".join(str(x) for kind, x in val.blocks(tables) if kind == "p")
    assert "Calibration on valid" in md


@pytest.mark.slow
def test_validate_end_to_end_on_a_tiny_base(study, tmp_path, capsys):
    out = tmp_path / "out"
    assert (
        main(
            [
                "curriculum",
                str(study),
                "--budget",
                str(BUDGET),
                "--policy",
                "marginal",
                "--out",
                str(out),
                "--replicates",
                "20",
                "--validate",
            ]
        )
        == 0
    )
    diff = pd.read_csv(out / "validate" / "differences.csv")
    assert set(diff["policy"]) == {"marginal"}
    assert {"macro", "overall", "biology"} <= set(diff["ability"])
    assert (diff["diff_lo"] <= diff["diff"]).all() and (diff["diff"] <= diff["diff_hi"]).all()
    cal = pd.read_csv(out / "validate" / "calibration.csv")
    assert set(cal["policy"]) == {"uniform", "marginal"} and (cal["seeds"] == 2).all()
    assert "Validation: the policies trained" in (out / "curriculum.md").read_text()
    assert "macro" in capsys.readouterr().out


def test_calibration_reports_the_out_of_sample_predictions_only(result, tmp_path):
    """A policy whose mix is a cell the curves were fitted to (here marginal's made equal to
    the study's n = 1 uniform cell; reconstruct's often is) and uniform when the study's own
    cells stand for it are in-sample: marked in calibration.csv and left out of the report's
    calibration numbers."""
    assert val.in_sample(result) == set()  # budget 12 over 10 abilities: no grid cell's mix
    assert val.in_sample(result, reused={0: "tiny-n1-s0"}) == {"uniform"}
    fitted = dict.fromkeys(ab.ABILITY_KEYS, 1)  # the n = 1 uniform cell's counts
    marginal = replace(result.allocations["marginal"], counts=fitted)
    refitted = replace(result, allocations={**result.allocations, "marginal": marginal})
    assert val.in_sample(refitted) == {"marginal"}
    _planted_validation(tmp_path, better=30)  # marginal 30 points off on biology
    cal = val.compare(refitted, tmp_path, replicates=200)["calibration"]
    assert set(cal.loc[cal["in_sample"], "policy"]) == {"marginal"} and len(cal) == 20
    out = cal[~cal["in_sample"]]
    text = val.calibration_text(cal)
    assert f"mean absolute error {out['error'].abs().mean():.2f} points" in text
    assert f"{int(out['covered'].sum())} of 10 (policy, ability)" in text
    assert "10 in-sample predictions (marginal" in text


def test_forgetting_compares_a_staged_policys_first_stage_with_its_last(study, tmp_path):
    """dmt's validation cells planted with two stages: math (a specialist, first) at 80 after
    stage 1 and 50 after stage 2, biology (second) 40 then 70: forgetting.csv finds both
    changes, paired over items and seeds, and the report shows it."""
    staged = make(
        study, Options(budget=BUDGET, policies=("dmt",), settings=replace(SETTINGS, replicates=30))
    )
    dmt = staged.allocations["dmt"]
    assert {"math", "code"} == set(dmt.stages[0]) and not set(dmt.stages[0]) & set(dmt.stages[1])
    rng = np.random.default_rng(2)
    plan = {1: {"math": 0.8, "biology": 0.4}, 2: {"math": 0.5, "biology": 0.7}}
    for seed in (0, 1):
        cell, rows, items = f"tiny-mix_dmt-{BUDGET}-s{seed}", [], []
        for stage, p in plan.items():
            for k in ab.ABILITY_KEYS:
                correct = rng.random(100) < p.get(k, 0.5)
                row, mine = planted_rows(cell, "dmt", seed, "test", k, correct, stage, stage=stage)
                rows.append(row)
                items += mine
        write_shard(tmp_path, cell, frame(items, per_item=True), per_item=True)
        write_shard(tmp_path, cell, frame(rows))
    forgot = val.forgetting(staged, tmp_path, 200).set_index("ability")
    assert -40 < forgot.loc["math", "change"] < -20 and forgot.loc["math", "change_hi"] < 0
    assert 20 < forgot.loc["biology", "change"] < 40 and forgot.loc["biology", "change_lo"] > 0
    assert forgot.loc["math", "first"] > forgot.loc["math", "last"]
    assert "macro" in forgot.index and (forgot["policy"] == "dmt").all()
    tables = {
        "calibration": pd.DataFrame(),
        "differences": pd.DataFrame(columns=["split", "ability"]),
        "forgetting": forgot.reset_index(),
    }
    assert any("Forgetting" in str(x) for _, x in val.blocks(tables))
    assert val.forgetting(result_without_stages(staged), tmp_path, 50).empty


def result_without_stages(result):
    plain = {p: replace(a, stages=()) for p, a in result.allocations.items()}
    return replace(result, allocations=plain)


def test_fit_base_chooses_on_one_base_and_the_decision_table_compares_both(tmp_path):
    """--fit-base xs: the counts come from xs's curves (the evidence's target), the mixes are
    for s; decision.csv holds each policy's test macro gain on both and whether its sign held."""
    curves = {k: Curve(a=-1.5, b_data=0.6, b_size=0.3) for k in ab.ABILITY_KEYS}
    table, _, _ = planted_study(
        curves,
        bases={"xs": 1e6, "s": 4e6},
        ns=(4, 16, 64),
        n_items=100,
        epochs=(3.0,),
        per_item=False,
        rng=1,
    )
    path = tmp_path / "two.csv"
    table.to_csv(path, index=False)
    options = Options(
        budget=120,
        policies=("marginal",),
        fit_base="xs",
        base="s",
        pools=dict.fromkeys(ab.ABILITY_KEYS, 1000),
        settings=replace(SETTINGS, replicates=20),
    )
    ev = make(path, options).evidence
    assert ev.target == "xs" and ev.trained_on == "s"
    with pytest.raises(CurriculumError, match="--base 'xl' is not in the study"):
        make(path, replace(options, base="xl"))
    diff = pd.DataFrame(
        [
            dict(
                base=b,
                policy=p,
                split="test",
                ability="macro",
                diff=d,
                diff_lo=d - 1,
                diff_hi=d + 1,
            )
            for b, p, d in [
                ("xs", "marginal", 3.0),
                ("s", "marginal", 2.0),
                ("xs", "reconstruct", 1.5),
                ("s", "reconstruct", -0.5),
            ]
        ]
    )
    made = val.decision(diff, "xs", "s").set_index("policy")
    assert made.loc["marginal", "held"] and not made.loc["reconstruct", "held"]
    assert made.loc["marginal", "confirmed"] and not made.loc["reconstruct", "confirmed"]
    assert made.loc["marginal", "diff_fit"] == 3.0 and made.loc["marginal", "diff"] == 2.0
