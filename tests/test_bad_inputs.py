"""The bad-input sweep (issue #20): every input the sweep named, each answered by a located
error (exit 2, the file/line/key named) or by the correct result, never by a traceback, a
silent wrong result or lost data. One test per input; the section says which item it is."""

from __future__ import annotations

import os
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
    argv = {"mix": ["mix", str(corpus), "--mix", str(mix)], "split": ["split", str(corpus)],
            "curate": ["curate", str(corpus)]}[command]  # fmt: skip
    before = files_of(corpus)
    assert data([*argv, "--out", str(corpus)]) == 2
    assert "source" in capsys.readouterr().err and files_of(corpus) == before


def test_an_unrelated_existing_folder_or_file_needs_overwrite(corpus, tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    afile = tmp_path / "afile.txt"
    afile.write_text("keep me too")
    for target in (mine, afile):
        assert data(["subset", str(corpus), "--per-ability", "1", "--out", str(target)]) == 2
        assert "--overwrite" in capsys.readouterr().err
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

    cfg = {"model_name_or_path": "some/base", "doit_dir": str(FIXTURE), "per_ability": 1,
           "output_dir": str(tmp_path / "run"), "report_to": "none", **keys}  # fmt: skip
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

    argv = ["--model_name_or_path", "some/base", "--doit_dir", str(FIXTURE), "--per_ability",
            "1", "--output_dir", str(tmp_path / "run")]  # fmt: skip
    cfg = yaml.safe_load(MICRO_SFT.read_text())
    flags = [x for k, v in cfg.items() if v is not None and not isinstance(v, dict | list)
             for x in (f"--{k}", str(v).lower() if isinstance(v, bool) else str(v))]  # fmt: skip
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

    argv = ["score", str(pred), "--data", str(FIXTURE), "--split", "test", "--out",
            str(pred.with_suffix(".scores.json"))]  # fmt: skip
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

    rec = {"type": item["type"], "idx": item["idx"], "question_format": item["question_format"],
           "answer_kind": item["answer_kind"], "prediction": "", **fields}  # fmt: skip
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
    argv = ["predict", "--model", str(tmp_path), "--data", str(tmp_path / "nowhere"), "--out",
            str(out)]  # fmt: skip
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

    table, _, _ = planted_study({"biology": Curve(), "code": Curve()}, n_items=50, rng=0,
                                epochs=(5.0,), per_item=False)  # fmt: skip
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
