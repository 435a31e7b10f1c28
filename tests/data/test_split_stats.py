"""Deterministic stratified split, and stats."""

import json

from doit.data import abilities as ab
from doit.data.cli import main
from doit.data.load import load_items
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


def test_stats_table_and_plot(tmp_path, capsys):
    root = write_pool(tmp_path / "a", uniform(12), synthetic=4)
    table = stats_table(load_all(root))
    row = table[(table.split == "test") & (table.ability == "ethics")].iloc[0]
    assert row.n == 3 and row.kinds == "multiselect:3" and row.turns_mean == 1.0
    assert set(table.split) == {"1000", "full", "valid", "test", "synthetic"}
    assert main(["stats", str(root), "--plot", str(tmp_path / "p.png")]) == 0
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
