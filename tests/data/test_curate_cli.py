"""`python -m doit.data curate`: output per source file, report, decontamination, errors."""

import json
from pathlib import Path

from doit.data.cli import main
from doit.data.load import read_items

FIXTURE = Path(__file__).parents[1] / "fixtures" / "doit_download"


def test_curate_cli_decontaminates_against_valid_test(tmp_path, capsys):
    src = tmp_path / "raw"
    src.mkdir()
    train = (FIXTURE / "curated/test/history_test.json").read_text(encoding="utf-8").splitlines()
    extra = json.loads(train[0])
    extra["messages"][0]["content"] = (
        "汉朝的开国皇帝是谁，这是一个完全不同的新问题。\nA. 刘备\nB. 刘秀\nC. 刘邦\nD. 刘彻"
    )
    extra["idx"] = 99
    dup = extra
    (src / "history.jsonl").write_text(
        "\n".join(
            [*train, json.dumps(extra, ensure_ascii=False), json.dumps(dup, ensure_ascii=False)]
        )
        + "\n",
        encoding="utf-8",
    )
    assert (
        main(["curate", str(src), "--against", str(FIXTURE), "--out", str(tmp_path / "out")]) == 0
    )
    items, problems = read_items(tmp_path / "out/history.jsonl")
    assert problems == [] and [it["idx"] for it in items] == [
        99
    ]  # the 3 copies of test items are dropped
    report = json.loads((tmp_path / "out/curate_report.json").read_text())
    reasons = sorted(d["reason"] for d in report["dropped"])
    assert reasons == ["contaminated_exact"] * 3 + ["exact_duplicate"]
    assert "kept 1 of 5" in capsys.readouterr().out


def test_curate_cli_bad_json_is_located(tmp_path, capsys):
    bad = tmp_path / "x.jsonl"
    bad.write_text('{"messages": []}\n{oops\n', encoding="utf-8")
    assert main(["curate", str(bad), "--out", str(tmp_path / "out")]) == 2
    assert f"{bad}:2: json: invalid JSON" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
