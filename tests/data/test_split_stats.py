"""Deterministic stratified split, and stats."""

import json
import shutil
from pathlib import Path

import pytest

from doit.data import abilities as ab
from doit.data.cli import main
from doit.data.load import load_items
from doit.data.schema import DataError
from doit.data.split import build_split
from doit.data.stats import load_all, stats_table
from tests.data.pools import uniform, write_pool


def test_split_is_stratified_and_order_free(tmp_path):
    a = write_pool(tmp_path / "a", uniform(30))
    b = write_pool(tmp_path / "b", uniform(30), shuffle_seed=7)
    assert (
        main(
            [
                "split",
                str(a / "curated/full"),
                "--out",
                str(tmp_path / "sa"),
                "--valid",
                "5",
                "--test",
                "4",
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "split",
                str(b / "curated/full"),
                "--out",
                str(tmp_path / "sb"),
                "--valid",
                "5",
                "--test",
                "4",
            ]
        )
        == 0
    )
    for split, n in (("test", 4), ("valid", 5), ("full", 21), ("1000", 21)):
        items = load_items(tmp_path / "sa", split)
        counts = {k: sum(it["ability"] == k for it in items) for k in ab.ABILITY_KEYS}
        assert set(counts.values()) == {n}, split
    for rel in ("curated/test/math_test.json", "curated/full/code_full.json"):
        assert (tmp_path / "sa" / rel).read_bytes() == (tmp_path / "sb" / rel).read_bytes()
    test_ids = {(it["ability"], it["idx"]) for it in load_items(tmp_path / "sa", "test")}
    train_ids = {(it["ability"], it["idx"]) for it in load_items(tmp_path / "sa", "full")}
    assert not test_ids & train_ids
    assert json.loads((tmp_path / "sa/manifest.json").read_text())["kind"] == "split"


FIXTURE = Path(__file__).parents[1] / "fixtures" / "doit_download"


def pools_only(root: Path) -> Path:
    """``root`` with curated/1000 and curated/full (the same records twice) and nothing else."""
    for split in ("valid", "test"):
        shutil.rmtree(root / "curated" / split)
    return root


def test_split_keeps_identical_records_once_and_counts_them(tmp_path, capsys):
    src = pools_only(write_pool(tmp_path / "src", uniform(30)))
    out = tmp_path / "out"
    assert main(["split", str(src), "--out", str(out), "--valid", "5", "--test", "4"]) == 0
    assert "300 identical records kept once" in capsys.readouterr().out
    for split, n in (("test", 4), ("valid", 5), ("full", 21)):
        items = load_items(out, split)  # the output loads: no duplicate idx
        assert len(items) == 10 * n, split
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["duplicates"] == {
        "identical_records_kept_once": 300,
        "by_ability": {k: 30 for k in ab.ABILITY_KEYS},
    }


def test_split_same_idx_different_content_names_both_files_and_lines(tmp_path):
    src = pools_only(write_pool(tmp_path / "src", uniform(30)))
    path = src / "curated/1000/math_1000.json"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    changed = json.loads(lines[6])
    changed["answer"] = "999"
    lines[6] = json.dumps(changed) + "\n"
    path.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(DataError) as e:
        build_split(src, tmp_path / "out", n_valid=5, n_test=4)
    [problem] = e.value.problems
    full = src / "curated/full/math_full.json"
    assert (problem.path, problem.line, problem.field) == (str(full), 7, "idx")
    assert f"{path}:7" in problem.message and "math idx 6" in problem.message
    assert not (tmp_path / "out").exists()


def test_split_carries_ood_and_synthetic_through(tmp_path):
    src = pools_only(write_pool(tmp_path / "src", uniform(30), synthetic=6))
    (src / "curated/test").mkdir()
    for key in ab.OOD_KEYS:
        shutil.copy(FIXTURE / f"curated/test/{key}.json", src / f"curated/test/{key}.json")
    out = tmp_path / "out"
    manifest = build_split(src, out, n_valid=5, n_test=4)
    test = load_items(out, "test")
    for key in ab.OOD_KEYS:
        want = [it["messages"] for it in load_items(FIXTURE, "test", abilities=key)]
        assert [it["messages"] for it in test if it["ability"] == key] == want, key
    rel = "synthetic/40960/general_instruction_gpt4_41k.json"
    assert (out / rel).read_bytes() == (src / rel).read_bytes()
    assert manifest["carried"] == sorted([rel, *(f"curated/test/{k}.json" for k in ab.OOD_KEYS)])


def test_stats_table_and_plot(tmp_path, capsys):
    root = write_pool(tmp_path / "a", uniform(12), synthetic=4)
    table = stats_table(load_all(root))
    row = table[(table.split == "test") & (table.ability == "ethics")].iloc[0]
    assert row.n == 3 and row.kinds == "multiselect:3" and row.turns_mean == 1.0
    assert set(table.split) == {"1000", "full", "valid", "test", "synthetic"}
    assert main(["stats", str(root), "--plot", str(tmp_path / "p.png")]) == 0
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
