"""Nested quantity subsets: nestedness, determinism under file order, layout."""

import json
from pathlib import Path

import pytest

from doit.data import abilities as ab
from doit.data.cli import main
from doit.data.load import load_items, load_split
from doit.data.mixes import parse_mix, sample_mix
from doit.data.subsets import build_subsets, build_synthetic_subsets
from doit.data.validate import validate_path
from tests.data.pools import uniform, write_pool

SIZES = (1, 4, 16, 64)


def train_ids(cell: Path) -> dict[str, list[int]]:
    items = load_items(cell, "train")
    out: dict[str, list[int]] = {}
    for it in items:
        out.setdefault(it["ability"], []).append(it["idx"])
    return out


@pytest.fixture(scope="module")
def pools(tmp_path_factory):
    base = tmp_path_factory.mktemp("pools")
    a = write_pool(base / "a", uniform(80), synthetic=200)
    b = write_pool(
        base / "b", uniform(80), shuffle_seed=123, synthetic=200
    )  # same items, other order
    return a, b


def test_nested_deterministic_and_order_free(pools, tmp_path):
    a, b = pools
    build_subsets(a, tmp_path / "a", sizes=SIZES)
    build_subsets(b, tmp_path / "b", sizes=SIZES)
    prev = None
    for n in SIZES:
        name = f"n{n:04d}"
        ids = train_ids(tmp_path / "a" / name)
        assert ids == train_ids(tmp_path / "b" / name)  # file order does not matter
        assert set(ids) == set(ab.ABILITY_KEYS) and all(len(v) == n for v in ids.values())
        if prev is not None:
            assert all(set(prev[k]) <= set(ids[k]) for k in ids)  # nested
        prev = ids
        files = sorted(p.name for p in (tmp_path / "a" / name / "curated/train").iterdir())
        assert (tmp_path / "a" / name / "curated/train/biology.jsonl").read_bytes() == (
            tmp_path / "b" / name / "curated/train/biology.jsonl"
        ).read_bytes()
        assert files == sorted(f"{k}.jsonl" for k in ab.ABILITY_KEYS)
    # the sample is random, not the first rows, and depends on the seed
    assert sorted(prev["math"]) != list(range(64))
    build_subsets(a, tmp_path / "s1", sizes=(16,), seed=1)
    assert train_ids(tmp_path / "s1/n0016") != train_ids(tmp_path / "a/n0016")


def test_cell_is_a_doit_dir(pools, tmp_path):
    a, _ = pools
    build_subsets(a, tmp_path / "out", sizes=(4,))
    cell = tmp_path / "out/n0004"
    assert validate_path(cell).ok
    assert len(load_split(cell, "test")) == 30 and len(load_split(cell, "train")) == 40
    m = json.loads((cell / "manifest.json").read_text())
    assert m["kind"] == "subset" and m["train_counts"]["math"] == 4
    assert "nested" in m["notes"][0]
    assert set(m["files"]) >= {"curated/train/math.jsonl", "curated/test/math_test.json"}


def test_pool_too_small_is_an_error(pools, tmp_path, capsys):
    a, _ = pools
    assert main(["subset", str(a), "--per-ability", "1,100", "--out", str(tmp_path / "x")]) == 2
    assert "n=100 exceeds the 'biology' pool of 80" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_synthetic_totals_nested(pools, tmp_path):
    a, _ = pools
    build_synthetic_subsets(a, tmp_path / "syn", totals=(10, 40, 160))
    ids = [
        {json.dumps(it["messages"]) for it in load_items(tmp_path / f"syn/s{n:05d}", "train")}
        for n in (10, 40, 160)
    ]
    assert [len(s) for s in ids] == [10, 40, 160] and ids[0] <= ids[1] <= ids[2]


def test_cli_subset_abilities(pools, tmp_path):
    a, _ = pools
    assert (
        main(
            [
                "subset",
                str(a),
                "--per-ability",
                "2",
                "--abilities",
                "math,role-play",
                "--out",
                str(tmp_path / "o"),
            ]
        )
        == 0
    )
    assert set(train_ids(tmp_path / "o/n0002")) == {"math", "role_play"}


def test_synthetic_subsets_do_not_depend_on_file_order(tmp_path):
    a = write_pool(tmp_path / "a", {}, synthetic=60)
    b = tmp_path / "b"
    rel = "synthetic/40960/general_instruction_gpt4_41k.json"
    (b / rel).parent.mkdir(parents=True)
    lines = (a / rel).read_text(encoding="utf-8").splitlines(keepends=True)
    (b / rel).write_text("".join(reversed(lines)), encoding="utf-8")
    build_synthetic_subsets(a, tmp_path / "sa", totals=(10, 40))
    build_synthetic_subsets(b, tmp_path / "sb", totals=(10, 40))
    for cell in ("s00010", "s00040"):
        got = [
            (tmp_path / s / cell / "curated/train/synthetic.jsonl").read_bytes()
            for s in ("sa", "sb")
        ]
        assert got[0] == got[1], cell
    mix = parse_mix({"synthetic": 10, "counts": {}}, "m.yaml")
    assert [it["uid"] for it in sample_mix(mix, a)] == [it["uid"] for it in sample_mix(mix, b)]
