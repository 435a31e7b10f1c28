"""The bad-input sweep: every input once found to crash, mislead or lose data, each answered
by a located error (exit 2, the file/line/key named) or by the correct result, never by a
traceback, a silent wrong result or lost data. One test per input, in sections by concern."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from doit.data.cli import main as data_main
from tests.data.pools import uniform, write_pool


def exit_code(main, argv: list[str]) -> int:
    """A command's exit status, whether it returns it or argparse exits with it."""
    try:
        return main(argv)
    except SystemExit as e:
        return e.code


def data(argv: list[str]) -> int:
    return exit_code(data_main, argv)


@pytest.fixture
def corpus(tmp_path):
    return write_pool(tmp_path / "corpus", uniform(12), synthetic=20)


def files_of(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".tmp" in p.name)


# --- 1. --out never replaces what it was not asked to --------------------------------------------
def test_subset_out_onto_its_source_is_refused_and_the_source_kept(corpus, capsys):
    before = files_of(corpus)
    assert data(["subset", str(corpus), "--per-ability", "1", "--out", str(corpus)]) == 2
    assert "source" in capsys.readouterr().err and files_of(corpus) == before


def test_out_onto_a_folder_holding_the_source_is_refused_even_with_overwrite(corpus, capsys):
    for flags in ([], ["--overwrite"]):
        argv = ["subset", str(corpus), "--per-ability", "1", "--out", str(corpus.parent)]
        assert data(argv + flags) == 2
        assert "contains the source" in capsys.readouterr().err
    assert files_of(corpus)


@pytest.mark.parametrize("command", ["mix", "split", "curate"])
def test_every_writer_refuses_its_source_as_out(command, corpus, tmp_path, capsys):
    mix = tmp_path / "m.yaml"
    mix.write_text("counts: {biology: 2}\n")
    argv = {
        "mix": ["mix", str(corpus), "--mix", str(mix)],
        "split": ["split", str(corpus)],
        "curate": ["curate", str(corpus)],
    }[command]
    before = files_of(corpus)
    assert data([*argv, "--out", str(corpus)]) == 2
    assert "source" in capsys.readouterr().err and files_of(corpus) == before


def test_an_unrelated_existing_folder_or_file_needs_overwrite(corpus, tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    afile = tmp_path / "afile.txt"
    afile.write_text("keep me too")
    for target, says in ((mine, "--overwrite"), (afile, "is a file; a folder is expected")):
        assert data(["subset", str(corpus), "--per-ability", "1", "--out", str(target)]) == 2
        assert says in capsys.readouterr().err  # a file is never replaced by a folder
    assert (mine / "notes.txt").read_text() == "keep me" and afile.read_text() == "keep me too"
    argv = ["subset", str(corpus), "--per-ability", "1", "--out", str(mine), "--overwrite"]
    assert data(argv) == 0 and (mine / "n0001").is_dir()


def test_rerunning_into_its_own_earlier_output_replaces_it(corpus, tmp_path):
    out = tmp_path / "cells"
    assert data(["subset", str(corpus), "--per-ability", "1", "--out", str(out)]) == 0
    assert data(["subset", str(corpus), "--per-ability", "2", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["n0002"]


def test_out_dot_is_a_located_error_with_nothing_left_behind(corpus, tmp_path, capsys):
    work = tmp_path / "work"
    work.mkdir()
    cwd = os.getcwd()
    try:
        os.chdir(work)
        assert data(["subset", str(corpus), "--per-ability", "1", "--out", "."]) == 2
    finally:
        os.chdir(cwd)
    assert "--out" in capsys.readouterr().err
    assert leftovers(work) == [] and leftovers(tmp_path) == []


def test_a_killed_writers_temporary_folder_is_removed_by_the_next_run(corpus, tmp_path):
    out = tmp_path / "cells"
    stale = tmp_path / f".cells.{2**22 + 12345}.tmp-abc"  # a pid no process has
    stale.mkdir()
    assert data(["subset", str(corpus), "--per-ability", "1", "--out", str(out)]) == 0
    assert leftovers(tmp_path) == []


# --- 4. every n is >= 1 ------------------------------------------------------------------------------
@pytest.mark.parametrize("n", ["-1", "0"])
def test_subset_sizes_below_one_are_refused(n, corpus, tmp_path, capsys):
    argv = ["subset", str(corpus), "--per-ability", n, "--out", str(tmp_path / "o")]
    assert data(argv) == 2
    assert "--per-ability" in capsys.readouterr().err and not (tmp_path / "o").exists()


def test_a_mix_count_of_zero_is_refused_in_favour_of_exclude(corpus, tmp_path, capsys):
    mix = tmp_path / "m.yaml"
    mix.write_text("counts: {biology: 2, ethics: 0}\n")
    assert data(["mix", str(corpus), "--mix", str(mix), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "counts.ethics" in err and "exclude" in err


# --- 6. a split that loads nothing is an error; a missing ability file is reported --------------
def test_validate_an_empty_corpus_is_invalid(tmp_path, capsys):
    empty = tmp_path / "empty" / "curated" / "test"
    empty.mkdir(parents=True)
    (empty / "biology_test.json").write_text("")
    assert data(["validate", str(tmp_path / "empty")]) == 2
    assert "no items" in capsys.readouterr().err


def test_validate_names_a_missing_ability_file(corpus, capsys):
    (corpus / "curated" / "test" / "ethics_test.json").unlink()
    assert data(["validate", str(corpus)]) == 2
    assert "ethics_test.json" in capsys.readouterr().err


def test_a_leave_one_out_cell_lacking_its_left_out_train_file_is_valid(corpus, tmp_path, capsys):
    mix = tmp_path / "loo.yaml"
    mix.write_text("counts: {biology: 2, math: 2}\nexclude: [ethics]\n")
    assert data(["mix", str(corpus), "--mix", str(mix), "--out", str(tmp_path / "cell")]) == 0
    assert data(["validate", str(tmp_path / "cell")]) == 0
    assert "did not draw" in capsys.readouterr().out


def test_loading_a_split_with_no_items_is_an_error(tmp_path):
    from doit.data.load import load_items
    from doit.data.schema import DataError

    with pytest.raises(DataError, match="no items"):
        load_items(tmp_path, "test")


# --- 5. a recipe key is type-checked the same way from YAML and from the command line ------------
FIXTURE = Path(__file__).parent / "fixtures" / "doit_download"
MICRO_SFT = Path(__file__).parents[1] / "recipes" / "configs" / "sft" / "micro" / "full.yaml"


def sft_config(tmp_path, **keys) -> str:
    import yaml

    cfg = {
        "model_name_or_path": "some/base",
        "doit_dir": str(FIXTURE),
        "per_ability": 1,
        "output_dir": str(tmp_path / "run"),
        "report_to": "none",
        **keys,
    }
    path = tmp_path / "sft.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


@pytest.mark.parametrize("value", [True, "fast", [1, 2]])
def test_a_wrong_typed_yaml_value_is_a_config_error_naming_its_key(value, tmp_path):
    from doit.train.errors import ConfigError
    from doit.train.sft import parse_args

    with pytest.raises(ConfigError, match="learning_rate"):
        parse_args(["--config", sft_config(tmp_path, learning_rate=value)])


def test_the_same_wrong_value_on_the_command_line_is_refused_the_same_way(tmp_path):
    from doit.train.errors import ConfigError
    from doit.train.sft import parse_args

    with pytest.raises(ConfigError, match="learning_rate"):
        parse_args(["--config", sft_config(tmp_path), "--learning_rate", "true"])


def test_yaml_values_and_the_same_flags_parse_alike(tmp_path):
    import yaml

    from doit.train.sft import parse_args

    argv = [
        "--model_name_or_path",
        "some/base",
        "--doit_dir",
        str(FIXTURE),
        "--per_ability",
        "1",
        "--output_dir",
        str(tmp_path / "run"),
    ]
    cfg = yaml.safe_load(MICRO_SFT.read_text())
    flags = [
        x
        for k, v in cfg.items()
        if v is not None and not isinstance(v, dict | list)
        for x in (f"--{k}", str(v).lower() if isinstance(v, bool) else str(v))
    ]
    from_yaml = parse_args(["--config", str(MICRO_SFT), *argv]).to_dict()
    from_flags = parse_args(["--config", str(MICRO_SFT), *flags, *argv]).to_dict()
    assert from_yaml == from_flags
    assert from_yaml["training"]["learning_rate"] == cfg["learning_rate"]


# --- 7, 9. predictions are checked where they are read, naming file:line:field ------------------
def predictions_file(tmp_path, lines: list[str]) -> Path:
    path = tmp_path / "pred.jsonl"
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return path


def score(pred: Path, capsys) -> tuple[int, str]:
    from doit.eval.cli import main

    argv = [
        "score",
        str(pred),
        "--data",
        str(FIXTURE),
        "--split",
        "test",
        "--out",
        str(pred.with_suffix(".scores.json")),
    ]
    code = exit_code(main, argv)
    return code, capsys.readouterr().err


def first_items():
    from doit.data.load import load_items

    items = load_items(FIXTURE, "test")
    return next(i for i in items if i["answer_kind"] == "mc"), next(
        i for i in items if i["answer_kind"] == "open"
    )


def line_of(item, **fields) -> str:
    import json

    rec = {
        "type": item["type"],
        "idx": item["idx"],
        "question_format": item["question_format"],
        "answer_kind": item["answer_kind"],
        "prediction": "",
        **fields,
    }
    return json.dumps(rec, ensure_ascii=False)


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"choice_ppl": ["1.0", "2.0", "3.0"]}, "choice_ppl"),
        ({"letter_logits": "A"}, "letter_logits"),
        ({"prediction": 3}, "prediction"),
        ({"idx": [1]}, "idx"),
    ],
)
def test_a_wrong_typed_prediction_field_is_located(bad, field, tmp_path, capsys):
    mc, _ = first_items()
    code, err = score(predictions_file(tmp_path, ["", line_of(mc, **bad)]), capsys)
    assert code == 2 and f"pred.jsonl:2: {field}:" in err


def test_a_prediction_that_is_not_an_object_is_located(tmp_path, capsys):
    code, err = score(predictions_file(tmp_path, ["3"]), capsys)
    assert code == 2 and "pred.jsonl:1:" in err


def test_an_empty_predictions_file_is_an_error(tmp_path, capsys):
    code, err = score(predictions_file(tmp_path, []), capsys)
    assert code == 2 and "no predictions" in err


def test_a_repeated_prediction_names_both_real_lines_after_blank_lines(tmp_path, capsys):
    mc, _ = first_items()
    code, err = score(predictions_file(tmp_path, ["", line_of(mc), "", "", line_of(mc)]), capsys)
    assert code == 2 and "pred.jsonl:5:" in err and "repeats line 2" in err


# --- 6 (evaluation). predicting on data that is not there ---------------------------------------
def test_predict_on_a_missing_corpus_writes_nothing_and_exits_2(tmp_path, capsys):
    from doit.eval.cli import main

    out = tmp_path / "p.jsonl"
    argv = [
        "predict",
        "--model",
        str(tmp_path),
        "--data",
        str(tmp_path / "nowhere"),
        "--out",
        str(out),
    ]
    assert exit_code(main, argv) == 2 and "no items" in capsys.readouterr().err
    assert not out.exists()


def test_predict_names_an_ability_the_data_lacks(tmp_path, capsys):
    from doit.data.schema import DataError
    from doit.eval.evaluate import load_split_items

    data_dir = write_pool(tmp_path / "c", uniform(3))
    (data_dir / "curated" / "test" / "ethics_test.json").unlink()
    with pytest.raises(DataError, match="ethics"):
        load_split_items(data_dir, "test", abilities="ethics,math")
    assert {it["ability"] for it in load_split_items(data_dir, "test")} >= {"math"}


# --- 8. the analysis refuses what it cannot read right ------------------------------------------
def planted_table(tmp_path, **change) -> Path:
    from doit.analysis.synthetic import Curve, planted_study

    table, _, _ = planted_study(
        {"biology": Curve(), "code": Curve()}, n_items=50, rng=0, epochs=(5.0,), per_item=False
    )
    for column, fn in change.items():
        table[column] = fn(table)
    path = tmp_path / "results.csv"
    table.to_csv(path, index=False)
    return path


def analysis(argv) -> int:
    from doit.analysis.cli import main

    return exit_code(main, argv)


def test_an_ability_the_registry_does_not_know_is_reported_and_left_out(tmp_path, capsys):
    path = planted_table(tmp_path, ability=lambda t: t["ability"].replace("code", "cod"))
    assert analysis(["fit", str(path), "--out", str(tmp_path / "out"), "--replicates", "50"]) == 0
    printed = capsys.readouterr().out
    assert "cod" in printed and "not in the ability registry" in printed
    import pandas as pd

    assert set(pd.read_csv(tmp_path / "out" / "sensitivity.csv")["ability"]) == {"biology"}


def test_scores_on_a_0_to_1_scale_are_refused(tmp_path, capsys):
    path = planted_table(tmp_path, score=lambda t: t["score"] / 100)
    assert analysis(["fit", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "score" in err and "0-1 scale" in err and not (tmp_path / "out").exists()


def test_an_empty_table_writes_empty_outputs_with_a_note(tmp_path, capsys):
    from doit.grid.results import frame

    path = tmp_path / "results.csv"
    frame([]).to_csv(path, index=False)
    assert analysis(["run", str(path), "--out", str(tmp_path / "out")]) == 0
    assert "no rows" in capsys.readouterr().out
    for name in ("selected.csv", "fits.csv", "sensitivity.csv", "report.html"):
        assert (tmp_path / "out" / name).is_file(), name


# --- grid helpers: a study planned over a stand-in base (plan reads only its config.json) ------
def fake_base(tmp_path) -> Path:
    base = tmp_path / "base"
    base.mkdir(exist_ok=True)
    (base / "config.json").write_text("{}")
    return base


def grid_file(tmp_path, **keys) -> Path:
    from tests.grid.conftest import grid_dict, write_grid

    return write_grid(tmp_path / "grid.yaml", grid_dict(fake_base(tmp_path), **keys))


def grid(argv: list[str]) -> int:
    from doit.grid.cli import main

    return exit_code(main, argv)


def planned_study(tmp_path, **keys) -> tuple[Path, list]:
    from doit.grid.plan import write_plan
    from doit.grid.spec import load_grid

    cells, _ = write_plan(load_grid(grid_file(tmp_path, **keys)), tmp_path / "study")
    return tmp_path / "study", cells


def status_of(study: Path, cell_id: str) -> dict:
    from doit.grid.runner import read_status

    return read_status(study, cell_id)


# --- 2. no name in a grid, and no path the runner writes, leaves the study folder ----------------
def tiny_base_entry(tmp_path, name: str) -> dict:
    return {"name": name, "arch": "llama", "params": 1000, "path": str(fake_base(tmp_path))}


@pytest.mark.parametrize(
    ("keys", "key"),
    [
        ({"bases": "../../../escaped_base"}, "bases[0].name"),
        ({"bases": "/tmp/absolute_base"}, "bases[0].name"),
        ({"bases": ".."}, "bases[0].name"),
        ({"sweep": {"learning_rate": ["0.1/../../x"]}}, "sweep.learning_rate"),
        ({"sweep": {"../learning_rate": [0.1]}}, "sweep.../learning_rate"),
        ({"mix": "my mix.yaml"}, "data.mix[0]"),
        ({"benchmarks": [{"name": "../../bench", "data_dir": "x"}]}, "benchmarks[0].name"),
    ],
    ids=["relative", "absolute", "dotdot", "sweep-value", "sweep-key", "mix-stem", "benchmark"],
)
def test_a_name_that_ends_up_in_a_path_is_checked_by_plan(keys, key, tmp_path, capsys):
    if "bases" in keys:
        keys = {"bases": [tiny_base_entry(tmp_path, keys["bases"])]}
    if "mix" in keys:
        mix = tmp_path / keys["mix"]
        mix.write_text("counts: {biology: 1}\n")
        keys = {"data": {"mix": [str(mix)]}}
    path, study = grid_file(tmp_path, **keys), tmp_path / "study"
    assert grid(["plan", str(path), "--out", str(study)]) == 2
    assert f"{path}: {key}: " in capsys.readouterr().err
    assert not study.exists() and not (tmp_path.parent / "escaped_base").exists()


def test_a_plan_whose_cell_id_leaves_the_study_is_refused_before_any_write(tmp_path, capsys):
    import json

    study, cells = planned_study(tmp_path)
    plan = json.loads((study / "plan.json").read_text())
    plan["cells"][0]["id"] = "../../escaped"
    (study / "plan.json").write_text(json.dumps(plan))
    assert grid(["run", str(study)]) == 2
    assert "escaped" in capsys.readouterr().err and not (tmp_path / "escaped").exists()


@pytest.mark.parametrize(
    "site", ["cell folder", "results", "items", "pretraining", "retire", "prune"]
)
def test_each_runner_write_or_delete_site_refuses_a_path_outside_the_study(site, tmp_path):
    from dataclasses import replace

    from doit.grid import cell, pretraining, results
    from doit.grid.plan import retire
    from doit.io import OutputError

    study, cells = planned_study(tmp_path)
    outside = tmp_path / "x"  # what a cell id "../../x" resolves to, from any folder of the study
    (outside / "run" / "checkpoint-1").mkdir(parents=True)
    (tmp_path / "x.parquet").write_text("not the study's")
    (study / "results").mkdir()
    (study / "results" / "y.parquet").write_text("a finished cell's rows")
    act = {
        "cell folder": lambda: cell.cell_dir(study, "../../x"),
        "results": lambda: results.write_shard(study, "../../x", results.frame([])),
        "items": lambda: results.write_shard(
            study, "../results/y", results.frame([], True), per_item=True
        ),
        "pretraining": lambda: pretraining.shard_path(study, "../../x"),
        "retire": lambda: retire(study, "../../x"),
        "prune": lambda: cell.prune(study, replace(cells[-1], id="../../x"), "last", []),
    }[site]
    with pytest.raises(OutputError, match="outside"):
        act()
    assert (outside / "run" / "checkpoint-1").is_dir()
    assert (tmp_path / "x.parquet").read_text() == "not the study's"
    assert (study / "results" / "y.parquet").read_text() == "a finished cell's rows"


# --- 3. a run folder resumes only the run that wrote it ----------------------------------------
def run_config(tmp_path, **keys) -> str:
    """min_steps 20: the schedule raises the epochs (3 of 2 steps) before run_info records them."""
    return sft_config(tmp_path, save_strategy="epoch", min_steps=20, **keys)


def half_trained(tmp_path, **keys):
    """A run folder as a killed run leaves it: run_info.json, a resumable checkpoint-2."""
    from doit.train.sft import parse_args, write_run_info
    from doit.train.sft.args import resolve_schedule
    from doit.train.sft.data import items_sha256, train_items

    args = parse_args(["--config", run_config(tmp_path, **keys)])
    items = train_items(args.data)
    info = {"source": str(FIXTURE), "train_items_sha256": items_sha256(items)}
    write_run_info(args, resolve_schedule(args, len(items)), info)  # as a run writes it
    ckpt = Path(args.training.output_dir) / "checkpoint-2"
    ckpt.mkdir()
    (ckpt / "trainer_state.json").write_text("{}")
    (ckpt / "optimizer.pt").write_text("")
    return args


def test_resuming_a_checkpoint_with_another_per_ability_is_refused_naming_it(tmp_path):
    from doit.train.errors import ConfigError
    from doit.train.sft import parse_args, run

    old = half_trained(tmp_path, per_ability=1)
    info = Path(old.training.output_dir) / "run_info.json"
    before = info.read_bytes()
    with pytest.raises(ConfigError, match=r"output_dir: .*checkpoint-2.*differs in: per_ability"):
        run(parse_args(["--config", run_config(tmp_path, per_ability=2)]))
    assert info.read_bytes() == before  # refused before run_info.json is rewritten


def test_the_same_run_resumes_whatever_its_execution_keys_and_other_data_does_not(tmp_path):
    from doit.train.errors import ConfigError
    from doit.train.sft import check_resume, parse_args
    from doit.train.sft.args import resolve_schedule
    from doit.train.sft.data import items_sha256, train_items

    half_trained(tmp_path, per_ability=1)
    same = parse_args(
        ["--config", run_config(tmp_path, per_ability=1, logging_steps=7, dataloader_num_workers=1)]
    )
    check_resume(same)  # before the draw, as `run` checks first: nothing differs
    items = train_items(same.data)
    assert resolve_schedule(same, len(items))["epochs_raised_for_min_steps"]
    check_resume(same, items_sha256(items))  # once the data is drawn and the schedule resolved
    with pytest.raises(ConfigError, match="differs in: the training data"):
        check_resume(same, "0" * 64)


# --- 6 (grid). a corpus that is not there, an evaluation that gives no rows --------------------
@pytest.mark.parametrize("corpus", ["missing", "empty"])
def test_a_grid_whose_corpus_holds_no_items_is_refused_by_plan(corpus, tmp_path, capsys):
    doit_dir = tmp_path / "corpus"
    if corpus == "empty":
        (doit_dir / "curated" / "valid").mkdir(parents=True)
    path, study = grid_file(tmp_path, doit_dir=str(doit_dir)), tmp_path / "study"
    assert grid(["plan", str(path), "--out", str(study)]) == 2
    assert f"{path}: doit_dir: " in capsys.readouterr().err and not study.exists()


def test_a_cell_whose_evaluation_gives_no_rows_is_failed_not_done(tmp_path, monkeypatch):
    from doit.grid import cell
    from doit.grid.runner import state, work_cell

    study, cells = planned_study(tmp_path)
    monkeypatch.setattr(cell, "evaluate_cell", lambda *a: ([], []))
    assert work_cell(study, cells[0].id) == "failed"
    assert "no rows" in status_of(study, cells[0].id)["error"]
    assert state(study, cells[0]) == "failed" and not (study / "results").exists()


# --- 10. one bad cell: refused by plan, or failed at run time while the others go on -----------
@pytest.mark.parametrize(
    ("keys", "key", "says"),
    [
        ({"overrides": {"learning_rate": "fast"}}, "sft.overrides.learning_rate", "float"),
        ({"overrides": {"learnin_rate": 0.1}}, "sft.overrides.learnin_rate", "learning_rate"),
        ({"overrides": {"deepspeed": "nope.json"}}, "sft.overrides.deepspeed", "no such file"),
        ({"sweep": {"learning_rate": ["fast"]}}, "sweep.learning_rate", "float"),
        ({"data": {"per_ability": [1, 500]}}, "data.per_ability", "exceeds"),
        ({"data": {"loo": {"values": [500]}}}, "data.loo", "exceeds"),
        ({"data": {"synthetic": [999]}}, "data.synthetic", "exceeds"),
    ],
    ids=[
        "override-type",
        "override-typo",
        "deepspeed",
        "sweep-type",
        "per_ability",
        "loo",
        "synthetic",
    ],
)
def test_plan_checks_every_cells_recipe_and_draw(keys, key, says, tmp_path, capsys):
    from tests.grid.conftest import grid_dict

    if "overrides" in keys:
        sft = grid_dict(tmp_path)["sft"]
        keys = {"sft": {**sft, "overrides": {**sft["overrides"], **keys["overrides"]}}}
    path, study = grid_file(tmp_path, **keys), tmp_path / "study"
    assert grid(["plan", str(path), "--out", str(study)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: {key}: cell tiny-" in err and says in err and "Traceback" not in err
    assert not study.exists()


def test_a_non_numeric_s_per_step_is_a_located_grid_error(tmp_path, capsys):
    base = {**tiny_base_entry(tmp_path, "tiny"), "s_per_step": "fast"}
    path = grid_file(tmp_path, bases=[base])
    assert grid(["plan", str(path), "--out", str(tmp_path / "study")]) == 2
    assert f"{path}: bases[0].s_per_step: " in capsys.readouterr().err


def test_plan_checks_recipes_without_preparing_the_process(tmp_path, monkeypatch):
    from doit.train import launch

    def prepared(*a, **k):
        raise AssertionError("plan prepared the process for a launch")

    monkeypatch.setattr(launch, "prepare", prepared)
    monkeypatch.delenv("DOIT_PLAN_PROBE", raising=False)
    environ = dict(os.environ)
    from tests.grid.conftest import grid_dict

    sft = grid_dict(tmp_path)["sft"]
    sft["overrides"] = {
        **sft["overrides"],
        "env": {"DOIT_PLAN_PROBE": "1"},
        "deepspeed": "recipes/deepspeed/zero2.json",
    }
    planned_study(tmp_path, sft=sft, launcher="deepspeed")
    import torch.distributed

    assert dict(os.environ) == environ and not torch.distributed.is_initialized()


def test_a_cell_that_exits_is_recorded_failed_and_the_runner_goes_on(tmp_path, monkeypatch):
    from doit.grid import runner

    study, cells = planned_study(tmp_path)
    ran = []

    def run_cell(study, cell_id, launch=None):
        ran.append(cell_id)
        if cell_id == cells[1].id:
            raise SystemExit(2)  # as a launcher or a recipe's parser ends a process

    monkeypatch.setattr(runner, "run_cell", run_cell)
    ended = runner.run_study(study)
    assert ran == [c.id for c in cells]
    assert ended == {cells[0].id: "done", cells[1].id: "failed", cells[2].id: "done"}
    assert status_of(study, cells[1].id) == {
        **status_of(study, cells[1].id),
        "state": "failed",
        "error": "SystemExit: 2",
    }


# --- 11. eval_epochs left out: the typed grid's default, last, everywhere -------------------------
def test_eval_epochs_left_out_scores_the_last_epoch(tmp_path, capsys):
    import json

    import yaml

    from doit.grid.evaluate import checkpoints_to_score
    from doit.grid.plan import read_plan

    path = grid_file(tmp_path)
    raw = yaml.safe_load(path.read_text())
    del raw["eval_epochs"]
    path.write_text(yaml.safe_dump(raw))
    assert grid(["plan", str(path), "--out", str(tmp_path / "study")]) == 0
    assert "scored epochs: last" in capsys.readouterr().out
    plan = read_plan(tmp_path / "study")
    assert plan.grid.eval_epochs == "last" and "eval_epochs" not in plan.grid.raw
    run = tmp_path / "run"
    (run / "checkpoint-2").mkdir(parents=True)
    (run / "DONE").write_text(json.dumps({"epoch": 2.0, "step": 4}))
    assert checkpoints_to_score(run, plan.grid.eval_epochs) == [(2.0, 4, run)]


# --- 12. the lock is looked at, never taken, and a failed cell stays failed ---------------------
def test_looking_at_a_cells_lock_never_takes_it(tmp_path, monkeypatch):
    import fcntl

    from doit.grid.runner import state

    study, cells = planned_study(tmp_path)

    def taken(*a, **k):
        raise AssertionError(
            "a status check took the cell's lock (a worker starting now "
            "would find the cell busy and skip it)"
        )

    monkeypatch.setattr(fcntl, "flock", taken)
    monkeypatch.setattr(fcntl, "lockf", taken)
    assert [state(study, c) for c in cells] == ["pending"] * 3


def test_a_lock_another_process_holds_reads_as_running(tmp_path):
    import multiprocessing

    from doit.grid.runner import cell_lock, is_locked, work_cell

    study, cells = planned_study(tmp_path)
    ctx = multiprocessing.get_context("fork")
    held, release = ctx.Event(), ctx.Event()

    def hold():
        with cell_lock(study, cells[0].id):
            held.set()
            release.wait(60)

    child = ctx.Process(target=hold)
    child.start()
    try:
        assert held.wait(60) and is_locked(study, cells[0].id)
        assert work_cell(study, cells[0].id) == "running"  # busy: left to its holder
    finally:
        release.set()
        child.join(60)
    assert not is_locked(study, cells[0].id)


def test_a_cell_failed_just_before_a_second_runner_reaches_it_is_not_rerun(tmp_path, monkeypatch):
    from doit.grid import runner

    study, cells = planned_study(tmp_path)
    second = runner.todo(study)  # a second runner's list: made while the cell was pending
    assert cells[1].id in [c.id for wave in second for c in wave]

    def fails(study, cell_id, launch=None):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(runner, "run_cell", fails)
    assert runner.work_cell(study, cells[1].id) == "failed"  # the first runner
    ran = []
    monkeypatch.setattr(runner, "run_cell", lambda study, cell_id, launch=None: ran.append(cell_id))
    assert runner.work_cell(study, cells[1].id) == "failed" and ran == []  # the second
    assert cells[1].id not in runner.run_study(study) and ran == [cells[0].id, cells[2].id]
    assert status_of(study, cells[1].id)["error"] == "RuntimeError: out of memory"
    assert runner.work_cell(study, cells[1].id, retry_failed=True) == "done"
    assert ran[-1] == cells[1].id


# --- the output rule: what --out may replace ---
import contextlib  # noqa: E402  (this section's own imports: it is appended whole)
import io  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from tests.tiny import TINY_PRETRAIN  # noqa: E402

PRETRAIN_XS = Path(__file__).parents[1] / "recipes" / "configs" / "pretrain" / "xs.yaml"


# One rule for every writer (`doit.io.check_output`): never an input or a folder holding one,
# never the cwd; an existing target only when it holds the same kind's output (or --overwrite);
# a file where a folder is expected and the reverse are one-line errors; checked first.
@pytest.fixture(scope="session")
def rule_base(tmp_path_factory) -> Path:
    """A tiny real base (tokenizer + 2-layer Llama), read-only to these tests."""
    from tests.tiny import make_base

    return make_base(tmp_path_factory.mktemp("rule") / "base")


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (or ``root`` itself) with its bytes: what must not change."""
    root = Path(root)
    if root.is_file():
        return {root.name: root.read_bytes()}
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def refused(code: int, err: str, *says: str) -> None:
    """Exit 2 and a one-line error (no traceback) that says each of ``says``."""
    assert code == 2, err
    lines = [x for x in err.strip().splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    for part in says:
        assert part in lines[0], (part, lines[0])


def sft_main(tmp_path, **keys) -> int:
    from doit.train.sft import main

    return exit_code(main, ["--config", run_config(tmp_path, **keys)])


@contextlib.contextmanager
def cwd_at(folder: Path):
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def test_sft_into_its_own_base_is_refused_and_the_base_kept(rule_base, tmp_path, capsys):
    before = snapshot(rule_base)
    code = sft_main(tmp_path, model_name_or_path=str(rule_base), output_dir=str(rule_base))
    refused(code, capsys.readouterr().err, "--output_dir", "the base (--model_name_or_path)")
    assert snapshot(rule_base) == before


def test_sft_into_a_folder_holding_the_users_metrics_is_refused(rule_base, tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "metrics.jsonl").write_text('{"my": "own numbers"}\n')
    code = sft_main(tmp_path, model_name_or_path=str(rule_base), output_dir=str(mine))
    refused(code, capsys.readouterr().err, "--output_dir", str(mine), "no run_info.json")
    assert snapshot(mine) == {"metrics.jsonl": b'{"my": "own numbers"}\n'}


def test_sft_into_its_corpus_or_the_cwd_is_refused(rule_base, corpus, tmp_path, capsys):
    before = snapshot(corpus)
    code = sft_main(
        tmp_path, model_name_or_path=str(rule_base), doit_dir=str(corpus), output_dir=str(corpus)
    )
    refused(code, capsys.readouterr().err, "--output_dir", "the corpus (--doit_dir)")
    work = tmp_path / "work"
    work.mkdir()
    with cwd_at(work):
        code = sft_main(tmp_path, model_name_or_path=str(rule_base), output_dir=".")
    refused(code, capsys.readouterr().err, "--output_dir", "the current directory")
    assert snapshot(corpus) == before and list(work.iterdir()) == []


def test_sft_output_dir_a_file_is_a_one_line_error(rule_base, tmp_path, capsys):
    afile = tmp_path / "notes.txt"
    afile.write_text("keep me")
    code = sft_main(tmp_path, model_name_or_path=str(rule_base), output_dir=str(afile))
    refused(code, capsys.readouterr().err, "--output_dir", "is a file; a folder is expected")
    assert afile.read_text() == "keep me"


def test_pretrain_into_its_corpus_is_refused(rule_base, tmp_path, capsys):
    """A corpus laid out as `doit data micro` writes what pretraining reads of it."""
    from doit.train.pretrain import main

    corpus = tmp_path / "micro"
    (corpus / "pretrain").mkdir(parents=True)
    for split in ("train", "valid"):
        (corpus / "pretrain" / f"{split}.txt").write_text("某甲 在 山 中 。\n" * 64)
    shutil.copytree(rule_base, corpus / "tokenizer", ignore=shutil.ignore_patterns("*.safetensors"))
    before = snapshot(corpus)
    argv = ["--config", str(PRETRAIN_XS), "--micro_dir", str(corpus), "--output_dir", str(corpus)]
    argv += [x for k, v in TINY_PRETRAIN.items() for x in (f"--{k}", str(v))]
    refused(exit_code(main, argv), capsys.readouterr().err, "--output_dir", "--micro_dir")
    assert snapshot(corpus) == before


def predict(argv: list[str]) -> int:
    from doit.eval.cli import main

    return exit_code(main, ["predict", *argv])


def test_predict_over_a_corpus_file_or_a_models_config_is_refused(
    rule_base, corpus, tmp_path, capsys
):
    test_file = corpus / "curated" / "test" / "biology_test.json"
    for out, says in (
        (test_file, "part of the corpus (--data)"),
        (rule_base / "config.json", "part of the model (--model)"),
    ):
        before = {**snapshot(corpus), **snapshot(rule_base)}
        argv = ["--model", str(rule_base), "--data", str(corpus), "--chat-format", "doit"]
        code = predict([*argv, "--out", str(out), "--overwrite"])  # not even with --overwrite
        refused(code, capsys.readouterr().err, "--out", says)
        assert {**snapshot(corpus), **snapshot(rule_base)} == before


def test_predict_out_a_directory_is_refused_before_predicting(rule_base, corpus, tmp_path, capsys):
    folder = tmp_path / "preds"
    folder.mkdir()
    argv = ["--model", str(rule_base), "--data", str(corpus), "--chat-format", "doit"]
    started = time.perf_counter()
    refused(predict([*argv, "--out", str(folder)]), capsys.readouterr().err, "--out", "is a folder")
    assert time.perf_counter() - started < 5 and list(folder.iterdir()) == []


def test_score_over_its_own_predictions_is_refused(tmp_path, capsys):
    mc, _ = first_items()
    pred = predictions_file(tmp_path, [line_of(mc)])
    before = pred.read_bytes()
    from doit.eval.cli import main

    argv = ["score", str(pred), "--data", str(FIXTURE), "--out", str(pred)]
    refused(exit_code(main, argv), capsys.readouterr().err, "--out", "is the predictions")
    assert pred.read_bytes() == before


def planted_study_folder(tmp_path) -> Path:
    """A study folder as the runner leaves it: results/<cell>.parquet."""
    import pandas as pd

    study = tmp_path / "study"
    (study / "results").mkdir(parents=True)
    pd.read_csv(planted_table(tmp_path)).to_parquet(study / "results" / "cell.parquet")
    return study


def test_analysis_into_a_folder_holding_the_users_fits_is_refused(tmp_path, capsys):
    table, mine = planted_table(tmp_path), tmp_path / "mine"
    mine.mkdir()
    (mine / "fits.csv").write_text("my,own\n1,2\n")
    argv = ["run", str(table), "--out", str(mine), "--replicates", "20"]
    refused(analysis(argv), capsys.readouterr().err, "--out", "--overwrite")
    assert snapshot(mine) == {"fits.csv": b"my,own\n1,2\n"}


def test_analysis_into_its_study_the_cwd_or_a_file_is_refused(tmp_path, capsys):
    study = planted_study_folder(tmp_path)
    before = snapshot(study)
    afile = tmp_path / "afile.txt"
    afile.write_text("keep me")
    for out, says in ((study, "is the source"), (afile, "is a file; a folder is expected")):
        argv = ["run", str(study), "--out", str(out), "--replicates", "20", "--overwrite"]
        refused(analysis(argv), capsys.readouterr().err, "--out", says)
    with cwd_at(study):
        argv = ["run", str(study), "--out", ".", "--replicates", "20"]
        refused(analysis(argv), capsys.readouterr().err, "--out", "is the source")
    assert snapshot(study) == before and afile.read_text() == "keep me"


def test_analysis_rerun_into_its_own_output_folder_writes_it_again(tmp_path, capsys):
    table, out = planted_table(tmp_path), tmp_path / "out"
    argv = ["fit", str(table), "--out", str(out), "--replicates", "20"]
    assert analysis(argv) == 0 and analysis(argv) == 0
    assert (out / "fits.csv").is_file() and (out / "manifest.json").is_file()


def test_stats_plot_a_directory_is_a_one_line_error(corpus, tmp_path, capsys):
    folder = tmp_path / "plots"
    folder.mkdir()
    argv = ["stats", str(corpus), "--plot", str(folder)]
    refused(data(argv), capsys.readouterr().err, "--plot", str(folder), "is a folder")


def curriculum_argv(source: Path, out: Path) -> list[str]:
    pools = "biology=100,code=100"
    return ["curriculum", str(source), "--budget", "40", "--pools", pools, "--out", str(out)]


def test_curriculum_into_a_folder_of_hand_written_mixes_is_refused(tmp_path, capsys):
    mine = tmp_path / "mine"
    (mine / "mixes").mkdir(parents=True)
    (mine / "mixes" / "marginal-40.yaml").write_text("counts: {biology: 40}  # mine\n")
    (mine / "curriculum.csv").write_text("my,own\n")
    before = snapshot(mine)
    argv = [*curriculum_argv(planted_table(tmp_path), mine), "--replicates", "20"]
    refused(analysis(argv), capsys.readouterr().err, "--out", "no manifest.json", "--overwrite")
    assert snapshot(mine) == before


def test_curriculum_into_its_study_is_refused(tmp_path, capsys):
    study = planted_study_folder(tmp_path)
    before = snapshot(study)
    argv = [*curriculum_argv(study, study), "--replicates", "20"]
    refused(analysis(argv), capsys.readouterr().err, "--out", "is the source")
    assert snapshot(study) == before


def test_plan_into_its_corpus_an_unrelated_folder_the_cwd_or_a_file_is_refused(
    corpus, tmp_path, capsys
):
    path = grid_file(tmp_path, doit_dir=str(corpus))
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    afile = tmp_path / "afile.txt"
    afile.write_text("keep me")
    before = {**snapshot(corpus), **snapshot(mine), **snapshot(afile)}
    cases = [
        (corpus, "the grid's doit_dir"),
        (mine, "no plan.json"),
        (afile, "is a file; a folder is expected"),
        (tmp_path, "contains the grid file"),
    ]
    for out, says in cases:
        refused(grid(["plan", str(path), "--out", str(out)]), capsys.readouterr().err, says)
    with cwd_at(mine):
        refused(grid(["plan", str(path), "--out", "."]), capsys.readouterr().err, "--out")
    assert {**snapshot(corpus), **snapshot(mine), **snapshot(afile)} == before


def test_demo_data_an_unrelated_folder_names_the_demos_own_flags(tmp_path, capsys):
    from recipes.demo import main

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    argv = ["--data", str(mine), "--study", str(tmp_path / "study")]
    err = (exit_code(main, argv), capsys.readouterr().err)
    refused(*err, "--data", str(mine))
    assert "--out" not in err[1] and "--overwrite" not in err[1]
    assert snapshot(mine) == {"notes.txt": b"keep me"} and not (tmp_path / "study").exists()


def test_a_read_only_output_parent_is_a_one_line_error_naming_it(tmp_path):
    """As a user without write access (root writes anywhere: a forked child drops to nobody)."""
    import multiprocessing

    from doit.eval.cli import main

    shared = Path(tempfile.mkdtemp(prefix="doit-ro-"))
    try:
        mc, _ = first_items()
        pred = predictions_file(shared, [line_of(mc)])
        locked = shared / "locked"
        locked.mkdir()
        for p in (shared, pred, locked):
            p.chmod(0o555 if p.is_dir() else 0o444)
        out = locked / "scores.json"
        argv = ["score", str(pred), "--data", str(FIXTURE), "--out", str(out)]
        ctx = multiprocessing.get_context("fork")
        reader, writer = ctx.Pipe(duplex=False)

        def as_nobody():
            err = io.StringIO()
            try:
                if os.geteuid() == 0:
                    os.setgid(65534)
                    os.setuid(65534)
                with contextlib.redirect_stderr(err):
                    code = exit_code(main, argv)
            except BaseException as e:  # a traceback is what this test refuses: report it
                code = f"raised {type(e).__name__}: {e}"
            writer.send((code, err.getvalue()))

        child = ctx.Process(target=as_nobody)
        child.start()
        assert reader.poll(120), "the command as nobody sent no answer"
        code, err = reader.recv()
        child.join(60)
        refused(code, err, "--out", str(locked), "permission denied")
        assert list(locked.iterdir()) == []
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def writer_commands(tmp_path) -> dict[str, tuple]:
    """Every command that writes a user-named path, with inputs it would otherwise fail on
    (missing), so that only a rule checked before any work answers `--out .` as it should."""
    from doit.analysis.cli import STEPS
    from doit.analysis.cli import main as analysis_main
    from doit.eval.cli import main as eval_main
    from doit.grid.cli import main as grid_main
    from doit.train.pretrain import main as pretrain_main
    from doit.train.sft import main as sft_main_
    from recipes.demo import main as demo_main

    missing, mix = str(tmp_path / "missing"), tmp_path / "m.yaml"
    mix.write_text("counts: {biology: 2}\n")
    commands = {
        "data subset": (data_main, ["subset", missing, "--per-ability", "1", "--out", "."]),
        "data mix": (data_main, ["mix", missing, "--mix", str(mix), "--out", "."]),
        "data split": (data_main, ["split", missing, "--out", "."]),
        "data curate": (data_main, ["curate", missing, "--out", "."]),
        "data micro": (data_main, ["micro", "--out", "."]),
        "data stats --plot": (data_main, ["stats", missing, "--plot", "."]),
        "eval predict": (
            eval_main,
            ["predict", "--model", missing, "--data", missing, "--out", "."],
        ),
        "eval score": (eval_main, ["score", missing, "--data", missing, "--out", "."]),
        "eval bench": (
            eval_main,
            ["bench", "--model", missing, "--data-dir", missing, "--out", "."],
        ),
        **{f"analysis {s}": (analysis_main, [s, missing, "--out", "."]) for s in STEPS},
        "analysis ladder": (analysis_main, ["ladder", missing, "--out", "."]),
        "analysis curriculum": (
            analysis_main,
            ["curriculum", missing, "--budget", "4", "--out", "."],
        ),
        "grid plan": (grid_main, ["plan", str(grid_file(tmp_path)), "--out", "."]),
        "sft": (sft_main_, ["--config", run_config(tmp_path, output_dir=".")]),
        "pretrain": (
            pretrain_main,
            ["--config", str(PRETRAIN_XS), "--micro_dir", missing, "--output_dir", "."],
        ),
        "demo --study": (demo_main, ["--data", missing, "--study", "."]),
        "demo --data": (demo_main, ["--data", ".", "--study", missing]),
    }
    return commands


def test_every_writer_checks_its_output_through_the_one_rule_first(tmp_path, capsys):
    work = tmp_path / "work"
    work.mkdir()
    for name, (main, argv) in writer_commands(tmp_path).items():
        with cwd_at(work):
            code = exit_code(main, argv)
        err = capsys.readouterr().err
        assert code == 2 and "is the current directory" in err, (name, err)
        assert list(work.iterdir()) == [] and not (tmp_path / "missing").exists(), name


def test_each_writers_own_earlier_output_passes_the_rule_and_a_stranger_does_not(tmp_path):
    from doit.analysis.cli import ANALYSIS
    from doit.eval.cli import PREDICTIONS, SCORES
    from doit.grid.plan import STUDY
    from doit.io import OutputError, check_output, write_json
    from doit.train.rundir import FINE_TUNING_RUN, PRETRAINING_RUN

    def made(name: str, *files: str) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        for f in files:
            (folder / f).write_text("{}")
        return folder

    own = {
        FINE_TUNING_RUN: made("sft", "run_info.json", "metrics.jsonl"),
        PRETRAINING_RUN: made("base", "doit_base.json"),  # the runner writes it before training
        STUDY: made("study", "plan.json", "demo.log"),
        ANALYSIS: made("legacy", "selected.csv", "fits.csv", "report.html"),  # before manifests
        PREDICTIONS: made("p", "pred.jsonl", "pred.rules.json") / "pred.jsonl",
        SCORES: write_json(tmp_path / "scores.json", {"abilities": {}, "macro_in_domain": None}),
    }
    stranger = made("mine", "notes.txt")
    for kind, path in own.items():
        assert check_output(path, kind) == path.resolve(), kind.name
        target = stranger if kind.expect == "dir" else stranger / "notes.txt"
        with pytest.raises(OutputError, match="exists and is not a doit"):
            check_output(target, kind)
        assert check_output(target, kind, overwrite=True) == target.resolve()
        with pytest.raises(OutputError, match="part of the input"):  # not even with overwrite
            check_output(target, kind, overwrite=True, inputs={"the input": stranger.parent})
    assert check_output(made("empty"), STUDY) and check_output(tmp_path / "new" / "x", STUDY)
    assert (stranger / "notes.txt").read_text() == "{}"


# --- silent results, plan checks, located errors -------------------------------------------------
@pytest.mark.parametrize(
    ("flags", "flag"), [(["--valid", "-1", "--test", "5"], "--valid"), (["--test", "-2"], "--test")]
)
def test_split_refuses_a_negative_split_size(flags, flag, corpus, tmp_path, capsys):
    out = tmp_path / "split"
    assert data(["split", str(corpus / "curated" / "1000"), "--out", str(out), *flags]) == 2
    assert f"argument {flag}: expected a number >= 0" in capsys.readouterr().err
    assert not out.exists()


def test_a_split_without_valid_or_test_is_warned_by_split_and_by_validate(corpus, tmp_path, capsys):
    out, pool = tmp_path / "split", corpus / "curated" / "1000"
    assert data(["split", str(pool), "--out", str(out), "--valid", "0", "--test", "0"]) == 0
    printed = capsys.readouterr().out
    assert "warning: no valid and no test split" in printed
    assert data(["validate", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "curated/valid:0: missing: warning: no valid split" in printed
    assert "curated/test:0: missing: warning: no test split" in printed and "2 warnings" in printed


def test_curate_refuses_a_max_tokens_below_one(corpus, tmp_path, capsys):
    out = tmp_path / "cur"
    assert data(["curate", str(corpus), "--out", str(out), "--max-tokens", "-5"]) == 2
    assert "argument --max-tokens" in capsys.readouterr().err and not out.exists()


def test_validate_names_an_empty_ability_file(corpus, capsys):
    empty = corpus / "curated" / "valid" / "ethics_valid.json"
    empty.write_text("\n")
    assert data(["validate", str(corpus)]) == 0
    assert f"{empty}:0: records: warning: empty" in capsys.readouterr().out


def finished(tmp_path, **keys):
    """A run folder as a finished run leaves it: run_info.json and DONE, no checkpoint state."""
    from doit.train import rundir

    args = half_trained(tmp_path, **keys)
    out = Path(args.training.output_dir)
    for ckpt in rundir.checkpoints(out):
        rundir.strip_training_state(ckpt)
    rundir.write_done(out, rundir.metrics_row("end", 2, 2.0, 10, 1.0))
    return args


def test_a_finished_run_rerun_under_another_config_is_refused_naming_the_keys(tmp_path):
    from doit.train.errors import ConfigError
    from doit.train.sft import parse_args, run

    finished(tmp_path, per_ability=1)
    same = run(parse_args(["--config", run_config(tmp_path, per_ability=1)]))
    assert same.trained is False  # the same run, finished: read back
    changed = run_config(tmp_path, per_ability=2, learning_rate=0.5)
    with pytest.raises(ConfigError, match=r"finished run .*differs in: learning_rate, per_ability"):
        run(parse_args(["--config", changed]))


def test_a_formulation_change_is_named_as_formulation_not_as_the_data(tmp_path):
    from doit.train.errors import ConfigError
    from doit.train.sft import check_resume, parse_args
    from doit.train.sft.args import resolve_schedule
    from doit.train.sft.data import items_sha256, train_items

    half_trained(tmp_path, per_ability=1)
    text = parse_args(["--config", run_config(tmp_path, per_ability=1, formulation="text")])
    items = train_items(text.data)
    resolve_schedule(text, len(items))
    with pytest.raises(ConfigError, match=r"differs in: formulation\)") as refused:
        check_resume(text, items_sha256(items))
    assert "training data" not in str(refused.value)


@pytest.mark.parametrize(
    ("key", "value"),
    [("num_train_epochs", 0), ("num_train_epochs", -2), ("learning_rate", -0.1)]
    + [("learning_rate", float("nan"))],
)
def test_a_schedule_that_cannot_train_is_refused_before_anything_is_written(
    key, value, tmp_path, capsys
):
    from doit.train.sft import main

    assert main(["--config", sft_config(tmp_path, **{key: value})]) == 2
    assert f"error: {key}: " in capsys.readouterr().err and not (tmp_path / "run").exists()


def test_save_strategy_left_out_is_the_recipes_epoch_and_steps_written_is_refused(tmp_path):
    from doit.train.errors import ConfigError
    from doit.train.sft import parse_args

    assert parse_args(["--config", sft_config(tmp_path)]).training.save_strategy == "epoch"
    with pytest.raises(ConfigError, match="save_strategy: expected one of epoch, got 'steps'"):
        parse_args(["--config", sft_config(tmp_path, save_strategy="steps")])


def test_a_recipe_yaml_giving_a_key_twice_is_an_error_naming_file_and_line(tmp_path):
    from doit.train.errors import ConfigError
    from doit.train.sft import parse_args

    path = Path(sft_config(tmp_path, learning_rate=0.1))
    path.write_text(path.read_text() + "learning_rate: 0.5\n")
    line = len(path.read_text().splitlines())
    with pytest.raises(ConfigError, match=rf"{path}:{line}: yaml: duplicate key 'learning_rate'"):
        parse_args(["--config", str(path)])


def test_a_grid_or_mix_yaml_giving_a_key_twice_is_an_error_naming_file_and_line(
    corpus, tmp_path, capsys
):
    path = grid_file(tmp_path)
    path.write_text(path.read_text() + "name: again\n")
    line = len(path.read_text().splitlines())
    assert grid(["plan", str(path), "--out", str(tmp_path / "study")]) == 2
    assert f"{path}:{line}: yaml: duplicate key 'name'" in capsys.readouterr().err
    mix = tmp_path / "m.yaml"
    mix.write_text("counts:\n  biology: 2\n  biology: 3\n")
    assert data(["mix", str(corpus), "--mix", str(mix), "--out", str(tmp_path / "o")]) == 2
    assert f"{mix}:3: yaml: duplicate key 'biology'" in capsys.readouterr().err
    assert not (tmp_path / "study").exists() and not (tmp_path / "o").exists()


def plan_cli(tmp_path, path) -> int:
    return grid(["plan", str(path), "--out", str(tmp_path / "study")])


def test_a_grid_that_plans_no_cell_is_refused_and_one_of_untuned_cells_warned(tmp_path, capsys):
    assert plan_cli(tmp_path, grid_file(tmp_path, seed=[])) == 2
    assert "plans no cells" in capsys.readouterr().err and not (tmp_path / "study").exists()
    assert plan_cli(tmp_path, grid_file(tmp_path, data={"per_ability": []})) == 0
    assert "warning: only untuned (n = 0) cells" in capsys.readouterr().out


def test_a_cells_pattern_matching_nothing_is_warned_by_run_and_by_plan(tmp_path, capsys):
    bench = {"name": "cmmlu", "data_dir": str(FIXTURE), "cells": "zzz*"}
    assert plan_cli(tmp_path, grid_file(tmp_path, benchmarks=[bench])) == 0
    assert "warning: benchmarks[0].cells 'zzz*' matches no scored cell" in capsys.readouterr().out
    assert grid(["run", str(tmp_path / "study"), "--cells", "zzz*"]) == 0
    assert "warning: --cells 'zzz*' matches no cell" in capsys.readouterr().out


@pytest.mark.parametrize("changed", ["sft.yaml", "corpus"])
def test_a_study_whose_inputs_changed_after_planning_is_refused_by_run(changed, tmp_path, capsys):
    import shutil

    corpus = shutil.copytree(FIXTURE, tmp_path / "corpus")
    study, cells = planned_study(tmp_path, doit_dir=str(corpus))
    sft = next(c for c in cells if c.kind == "sft")
    edited = study / "cells" / sft.id / "sft.yaml"
    if changed == "sft.yaml":
        edited.write_text(edited.read_text() + "learning_rate: 0.5\n")
    else:
        edited = next((corpus / "curated" / "test").glob("*.json"))
        edited.write_text(edited.read_text().splitlines(keepends=True)[0])
    assert grid(["run", str(study)]) == 2
    err = capsys.readouterr().err
    assert (
        "changed since it was planned" in err
        and str(edited if changed == "sft.yaml" else corpus) in err
    )
    assert not (study / "results").exists()


@pytest.mark.parametrize("column", ["n_items", "n_per_ability"])
def test_a_negative_count_in_a_results_table_is_a_located_error(column, tmp_path, capsys):
    path = planted_table(tmp_path, **{column: lambda t: -t[column].abs() - 1})
    assert analysis(["run", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"{path}: {column}: " in err and "negative" in err and not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("flags", "flag"),
    [(["--delta", "-2"], "--delta"), (["--replicates", "0"], "--replicates")],
)
def test_analysis_run_refuses_a_flag_that_means_nothing(flags, flag, tmp_path, capsys):
    path = planted_table(tmp_path)
    assert analysis(["run", str(path), "--out", str(tmp_path / "out"), *flags]) == 2
    assert f"argument {flag}: expected" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_zero_byte_results_table_is_a_located_error(tmp_path, capsys):
    path = tmp_path / "results.csv"
    path.write_bytes(b"")
    assert analysis(["run", str(path), "--out", str(tmp_path / "out")]) == 2
    assert f"{path}: empty file" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("rows", "says"),
    [
        ("ability,extra\nbiology,fast\n", "features.csv:2: extra: 'fast' is not a number"),
        ("ability,extra\nbiologie,1.0\n", "features.csv:2: ability: 'biologie' is not"),
        ("name,extra\nbiology,1.0\n", "features.csv: no 'ability' column"),
    ],
    ids=["non-numeric", "unknown-ability", "no-ability-column"],
)
def test_a_bad_features_csv_is_refused_before_anything_is_written(rows, says, tmp_path, capsys):
    features = tmp_path / "features.csv"
    features.write_text(rows)
    path = planted_table(tmp_path)
    argv = ["run", str(path), "--out", str(tmp_path / "out"), "--features", str(features)]
    assert analysis([*argv, "--replicates", "20"]) == 2
    assert says in capsys.readouterr().err and not (tmp_path / "out").exists()


def curriculum_table(tmp_path) -> Path:
    from doit.analysis.synthetic import Curve, planted_study

    table, _, _ = planted_study(
        {"biology": Curve(), "code": Curve(a=-2.0)},
        ns=(4, 16, 64),
        n_items=40,
        rng=0,
        epochs=(5.0,),
        per_item=False,
    )
    path = tmp_path / "results.csv"
    table.to_csv(path, index=False)
    return path


def curriculum(tmp_path, *flags) -> int:
    path, out = curriculum_table(tmp_path), tmp_path / "cur"
    return analysis(["curriculum", str(path), "--budget", "40", "--out", str(out), *flags])


def test_curriculum_weights_all_zero_are_refused(tmp_path, capsys):
    flags = ["--pools", "biology=100,code=100", "--replicates", "20"]
    assert curriculum(tmp_path, *flags, "--weights", "biology=0,code=0") == 2
    assert "--weights: every weight is 0" in capsys.readouterr().err
    assert not (tmp_path / "cur").exists()


def test_curriculum_chosen_and_judged_on_test_is_warned(tmp_path, capsys):
    flags = ["--pools", "biology=100,code=100", "--replicates", "20", "--split", "test"]
    curriculum(tmp_path, *flags, "--validate")  # a table, not a study: validate then refuses
    printed = capsys.readouterr().out
    assert "warning: --split test with --validate" in printed


@pytest.mark.parametrize(("flag", "value"), [("--replicates", "0"), ("--budget", "-1")])
def test_curriculum_refuses_a_count_below_one(flag, value, tmp_path, capsys):
    flags = ["--pools", "biology=100,code=100", flag, value]
    assert curriculum(tmp_path, *flags) == 2
    assert f"argument {flag}: expected" in capsys.readouterr().err


def demo_module():
    import importlib.util

    path = Path(__file__).parents[1] / "recipes" / "demo.py"
    spec = importlib.util.spec_from_file_location("demo_recipe", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_copied_demo_study_reports_its_own_report_path(tmp_path):
    import shutil

    demo = demo_module()
    out = tmp_path / "a" / "analysis"
    out.mkdir(parents=True)
    (out / "report.html").write_text("<html></html>")
    asked = {"budget": 40, "replicates": 100}
    demo.save_summary(out, "sha", asked, ["found", f"report: {out / 'report.html'}"])
    copy = Path(shutil.copytree(tmp_path / "a", tmp_path / "b")) / "analysis"
    assert demo.reuse_summary(copy, "sha", asked) == ["found", f"report: {copy / 'report.html'}"]
    for other in ({"budget": 40, "replicates": 200}, {"budget": 80, "replicates": 100}):
        assert demo.reuse_summary(copy, "sha", other) is None  # asked otherwise: analysed again


@pytest.mark.parametrize("flag", ["--budget", "--replicates", "--workers"])
def test_the_demo_refuses_a_count_below_one_at_start_naming_its_flag(flag, tmp_path, capsys):
    demo = demo_module()
    argv = ["--study", str(tmp_path / "s"), "--data", str(tmp_path / "d"), flag, "-1"]
    assert exit_code(demo.main, argv) == 2
    assert f"argument {flag}: expected" in capsys.readouterr().err
    assert not (tmp_path / "s").exists() and not (tmp_path / "d").exists()


def corpus_without_option_text(tmp_path, rel: str) -> tuple[Path, Path]:
    """A copy of the fixture whose items in ``rel`` have an option D without text."""
    import shutil

    corpus = Path(shutil.copytree(FIXTURE, tmp_path / "corpus"))
    path = corpus / rel
    text = path.read_text(encoding="utf-8")
    assert "\\nD. " in text
    path.write_text(re.sub(r"\\nD\.[^\\\"]*", r"\\nD.", text), encoding="utf-8")
    return corpus, path


@pytest.mark.parametrize(
    ("keys", "says"),
    [
        ({"eval_epochs": [7]}, "eval_epochs: epoch 7 is beyond cell tiny-"),
        (
            {"benchmarks": [{"name": "cmmlu", "data_dir": "no/such/bench"}]},
            "benchmarks[0].data_dir",
        ),
    ],
    ids=["eval_epochs", "benchmark-data_dir"],
)
def test_plan_refuses_what_would_fail_after_training(keys, says, tmp_path, capsys):
    assert plan_cli(tmp_path, grid_file(tmp_path, **keys)) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and not (tmp_path / "study").exists()


def test_plan_refuses_a_formulation_an_item_cannot_be_asked_in(tmp_path, capsys):
    corpus, bad = corpus_without_option_text(tmp_path, "curated/test/biology_test.json")
    path = grid_file(tmp_path, doit_dir=str(corpus), formulation=["text"])
    assert plan_cli(tmp_path, path) == 2
    err = capsys.readouterr().err
    assert f"{path}: formulation: {bad}:1: text formulation: option D has no text" in err
    assert not (tmp_path / "study").exists()


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory) -> Path:
    from tests.tiny import make_base

    return make_base(tmp_path_factory.mktemp("base") / "llama")


def test_sft_in_a_formulation_an_item_cannot_be_asked_in_is_located(tiny_base, tmp_path, capsys):
    from doit.train.sft import main

    corpus, bad = corpus_without_option_text(tmp_path, "curated/1000/biology_1000.json")
    config = sft_config(
        tmp_path, model_name_or_path=str(tiny_base), doit_dir=str(corpus), formulation="text"
    )
    assert main(["--config", config]) == 2
    assert re.search(rf"error: formulation: {bad}:\d+: text formulation", capsys.readouterr().err)
    assert not (tmp_path / "run" / "run_info.json").exists()


def test_a_benchmark_on_every_cell_scores_the_untuned_base_in_its_chat_format(
    tiny_base, tmp_path, monkeypatch
):
    import pandas as pd

    monkeypatch.setenv("DOIT_CACHE", str(tmp_path / "cache"))
    from doit.grid.plan import write_plan
    from doit.grid.runner import work_cell
    from doit.grid.spec import load_grid
    from tests.grid.conftest import grid_dict, write_grid

    benchmarks = [{"name": "cmmlu", "data_dir": str(FIXTURE.parent / "benchmarks")}]
    keys = grid_dict(tiny_base)
    keys["sft"]["overrides"]["num_train_epochs"] = 1
    raw = {**keys, "data": {"per_ability": [1]}, "benchmarks": benchmarks, "eval_epochs": "last"}
    grid_path = write_grid(tmp_path / "grid.yaml", raw)
    cells, _ = write_plan(load_grid(grid_path), tmp_path / "study")
    assert [c.kind for c in cells] == ["base", "sft"]
    for c in cells:
        assert work_cell(tmp_path / "study", c.id) == "done", status_of(tmp_path / "study", c.id)
    for c in cells:
        rows = pd.read_parquet(tmp_path / "study" / "results" / f"{c.id}.parquet")
        assert "cmmlu" in set(rows["split"]), c.id


@pytest.mark.parametrize("where", ["copy", "write"])
def test_a_full_disk_during_subset_is_one_line_naming_the_path_with_nothing_left(
    where, corpus, tmp_path, monkeypatch, capsys
):
    import errno
    import shutil

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(*((shutil, "copyfile", full) if where == "copy" else (os, "fsync", full)))
    out = tmp_path / "cells"
    assert data(["subset", str(corpus), "--per-ability", "1", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "No space left on device" in err and str(tmp_path) in err
    assert not out.exists() and leftovers(tmp_path) == []


def test_a_file_that_is_not_utf8_is_named_with_its_line_by_validate_stats_and_score(
    corpus, tmp_path, capsys
):
    bad = corpus / "curated" / "test" / "biology_test.json"
    bad.write_bytes(bad.read_bytes() + b'{"messages": "\xff\xfe"}\n')
    line = len(bad.read_bytes().splitlines())
    for command in ("validate", "stats"):
        assert data([command, str(corpus)]) == 2
        err = capsys.readouterr().err
        assert f"{bad}:{line}: encoding: not UTF-8 text" in err, command
    pred = tmp_path / "pred.jsonl"
    pred.write_bytes(b'{"a": 1}\n\xff\n')
    code, err = score(pred, capsys)
    assert code == 2 and f"{pred}:2: not UTF-8 text" in err


@pytest.mark.parametrize("command", ["stats", "curate"])
def test_a_tokenizer_that_is_not_a_local_folder_is_refused_without_the_hub(
    command, corpus, tmp_path, monkeypatch, capsys
):
    import transformers

    def asked(*a, **k):
        raise AssertionError("the hub (or a tokenizer load) was tried")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", asked)
    out = ["--out", str(tmp_path / "o")] if command == "curate" else []
    assert data([command, str(corpus), "--tokenizer", "nosuchtok", *out]) == 2
    assert "--tokenizer: nosuchtok: no such folder" in capsys.readouterr().err


def test_pretrain_refuses_a_block_size_below_one_and_an_empty_train_file(tmp_path, capsys):
    from doit.train.pretrain import main

    out = tmp_path / "run"
    argv = ["--config", str(PRETRAIN_XS), "--output_dir", str(out)]
    assert main([*argv, "--block_size", "0"]) == 2
    assert "error: block_size: expected an integer >= 1" in capsys.readouterr().err
    empty, tok = tmp_path / "train.txt", tmp_path / "tok"
    empty.write_text("\n\n")
    tok.mkdir()
    files = ["--train_file", str(empty), "--valid_file", str(empty), "--tokenizer_path", str(tok)]
    assert main([*argv, *files]) == 2
    assert f"error: train_file: {empty} is empty" in capsys.readouterr().err
    assert not out.exists()


def test_sft_on_a_base_asking_for_its_own_code_is_refused_clearly(tiny_base, tmp_path, capsys):
    import json
    import shutil

    from doit.train.sft import main

    base = Path(shutil.copytree(tiny_base, tmp_path / "custom"))
    config = json.loads((base / "config.json").read_text())
    config.update(model_type="my_arch", auto_map={"AutoModelForCausalLM": "my.MyModel"})
    (base / "config.json").write_text(json.dumps(config))
    assert main(["--config", sft_config(tmp_path, model_name_or_path=str(base))]) == 2
    err = capsys.readouterr().err
    assert "model_name_or_path: " in err and "asks for the base's own code" in err
    assert "AutoModelForCausalLM: my.MyModel" in err
    assert not (tmp_path / "run" / "run_info.json").exists()


def test_a_ladder_of_one_run_is_refused_before_anything_is_written(tmp_path, capsys):
    import json

    run = tmp_path / "ladder" / "vanilla_s" / "seed0"
    run.mkdir(parents=True)
    end = {"kind": "end", "step": 8, "tokens": 100, "wall_s": 1.0, "arch": "vanilla"}
    end |= {"size": "s", "seed": 0, "params_non_embedding": 1000, "params_total": 2000}
    end |= {"valid_loss": 4.0, "unigram_entropy": 5.7, "unigram_valid_loss": 5.8}
    (run / "metrics.jsonl").write_text(json.dumps(end) + "\n")
    out = tmp_path / "out"
    assert analysis(["ladder", str(tmp_path / "ladder"), "--out", str(out)]) == 2
    assert "needs finished runs at two sizes or more" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("command", ["predict", "bench"])
def test_a_batch_size_below_one_is_refused_before_the_model_loads(command, tmp_path, capsys):
    from doit.eval.cli import main

    data_flag = "--data" if command == "predict" else "--data-dir"
    argv = [command, "--model", str(tmp_path / "m"), data_flag, str(FIXTURE), "--batch-size", "0"]
    argv += ["--out", str(tmp_path / "out.jsonl")]
    assert exit_code(main, argv) == 2
    err = capsys.readouterr().err
    assert "argument --batch-size" in err and "expected a number >= 1, got '0'" in err


def test_curriculum_from_another_directory_names_the_grids_corpus_not_found(tmp_path, monkeypatch):
    import shutil

    from doit.analysis.curriculum.evidence import _pools
    from doit.analysis.curriculum.options import CurriculumError, Options

    shutil.copytree(FIXTURE, tmp_path / "rel" / "corpus")
    monkeypatch.chdir(tmp_path)
    study, _ = planned_study(tmp_path, doit_dir="rel/corpus")
    assert _pools(str(study), Options(budget=40), ["biology"])["biology"] > 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    with pytest.raises(
        CurriculumError, match=r"the grid's doit_dir rel/corpus \(in .*plan.json\) was not found"
    ):
        _pools(str(study), Options(budget=40), ["biology"])
