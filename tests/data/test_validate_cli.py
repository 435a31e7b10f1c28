"""`python -m doit.data validate` and the expected-layout check."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from doit.data.cli import main
from doit.data.validate import validate_path

FIXTURE = Path(__file__).parents[1] / "fixtures" / "doit_download"


def test_cli_exit_codes(tmp_path, capsys):
    assert main(["validate", str(FIXTURE)]) == 0
    bad = tmp_path / "biology_test.json"
    bad.write_text(
        '{"messages": [{"role": "user", "content": "q"}], "idx": 1, "type": "biology", "question_format": 0}\n'
        "[1, 2\n",
        encoding="utf-8",
    )
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:1: messages: the last turn must be the assistant's" in err
    assert f"{bad}:2: json: invalid JSON" in err


def test_module_entry_point_runs():
    out = subprocess.run(
        [sys.executable, "-m", "doit.data", "validate", "--help"], capture_output=True, text=True
    )
    assert out.returncode == 0 and "--expect" in out.stdout


def test_expect_doit_reports_counts():
    report = validate_path(FIXTURE, expect="doit")
    msgs = [str(p) for p in report.errors]
    assert any(
        "curated/1000/biology_1000.json:0: records: expected 1000 records, found 2" in m
        for m in msgs
    )
    assert any("curated/full/reasoning_full.json:0: records: expected 12751" in m for m in msgs)
    assert any(
        "general_instruction_gpt4_41k.json:0: records: expected at least 40960, found 6" in m
        for m in msgs
    )


def test_expect_custom_and_manifest_revision(tmp_path, capsys):
    root = tmp_path / "dl"
    shutil.copytree(FIXTURE, root)
    spec = {
        "files": [
            {"path": "curated/test/{ability}_test.json", "min_count": 1},
            {"path": "curated/test/{ood}.json", "count": 1},
            {"path": "curated/valid/biology_valid.json", "count": 2},
        ]
    }
    exp = tmp_path / "expected.yaml"
    exp.write_text(yaml.safe_dump(spec))
    assert main(["validate", str(root), "--expect", str(exp), "--revision", "abc123"]) == 0
    manifest = json.loads((root / "manifest.json").read_text())
    assert manifest["revision"] == "abc123" and manifest["kind"] == "download"
    assert manifest["counts"]["test"]["role_play"] == 1
    assert "2023-12-01" in capsys.readouterr().out
    (root / "curated/test/ceval_physician.json").unlink()
    assert main(["validate", str(root), "--expect", str(exp)]) == 2
    assert "ceval_physician.json:0: file: missing" in capsys.readouterr().err
