"""Loading the download layout into datasets with the fixed item schema."""

import json
import shutil
from pathlib import Path

import datasets
import pytest

from doit.data import abilities as ab
from doit.data.load import ITEM_FEATURES, load_doit, load_split
from doit.data.schema import DataError

FIXTURE = Path(__file__).parents[1] / "fixtures" / "doit_download"


def test_load_doit_layout():
    d = load_doit(FIXTURE)
    assert set(d) == {"train", "valid", "test"}
    assert d["test"].features == ITEM_FEATURES
    assert set(d["test"]["ability"]) == set(ab.ABILITY_KEYS) | set(ab.OOD_KEYS)
    assert set(d["train"]["ability"]) == set(ab.ABILITY_KEYS)
    # the code valid file is a JSON array, the rest JSON Lines named .json
    assert FIXTURE.joinpath("curated/valid/code_valid.json").read_text().lstrip().startswith("[")
    assert "code" in d["valid"]["ability"]


def test_filters_and_pools():
    test = load_split(FIXTURE, "test", abilities="math,role-play", ood=False)
    assert sorted(set(test["ability"])) == ["math", "role_play"]
    assert len(load_split(FIXTURE, "full")) == len(load_split(FIXTURE, "train"))
    syn = load_split(FIXTURE, ab.SYNTHETIC)
    assert len(syn) == 6 and set(syn["answer_kind"]) == {None}


def test_hf_dataset_saved_to_disk(tmp_path):
    root = tmp_path / "dl"
    shutil.copytree(FIXTURE, root)
    path = root / "curated/test/math_test.json"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    path.unlink()
    datasets.Dataset.from_list(rows).save_to_disk(str(root / "curated/test/math_test"))
    test = load_split(root, "test", abilities="math")
    assert test["gold"] == ["7", "\\frac{3}{4}"]


def test_load_raises_with_every_problem(tmp_path):
    root = tmp_path / "dl"
    shutil.copytree(FIXTURE, root)
    (root / "curated/test/biology_test.json").write_text(
        '{bad\n{"messages": []}\n', encoding="utf-8"
    )
    with pytest.raises(DataError) as e:
        load_split(root, "test")
    lines = [str(p) for p in e.value.problems]
    path = root / "curated/test/biology_test.json"
    assert lines[0].startswith(f"{path}:1: json:")
    assert lines[1].startswith(f"{path}:2: messages:")
