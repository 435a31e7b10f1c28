"""The results table's contract: required columns, types, one row per key, atomic shards."""

from __future__ import annotations

import pandas as pd
import pytest

from doit.grid.results import (
    REQUIRED,
    ResultsError,
    frame,
    read_results,
    write_csv,
    write_shard,
)


def row(**keys) -> dict:
    r = {
        "cell": "c1",
        "base": "b",
        "arch": "vanilla",
        "params": 100,
        "construction": "curated",
        "mix": None,
        "n_per_ability": 4,
        "n_total": 40,
        "seed": 0,
        "epoch": 1.0,
        "step": 5,
        "split": "test",
        "ability": "math",
        "score": 12.5,
        "n_items": 100,
        "chance": 0.0,
    }
    return {**r, **keys}


def test_shards_gather_into_one_table_with_the_schemas_types(tmp_path):
    write_shard(tmp_path, "c1", frame([row(), row(ability="code", score=50.0)]))
    write_shard(tmp_path, "c2", frame([row(cell="c2", construction="base", n_per_ability=0)]))
    df = read_results(tmp_path)
    assert len(df) == 3 and list(df.columns[: len(REQUIRED)]) == list(REQUIRED)
    assert str(df["params"].dtype) == "Int64" and df["excluded_ability"].isna().all()
    again = read_results(write_csv(tmp_path))  # results.csv reads back the same
    pd.testing.assert_frame_equal(df, again)
    assert not list(tmp_path.rglob("*.tmp"))


@pytest.mark.parametrize("column", ["score", "n_items", "construction"])
def test_a_table_without_a_required_column_is_an_error_naming_it(tmp_path, column):
    path = tmp_path / "t.csv"
    frame([row()]).drop(columns=[column]).to_csv(path, index=False)
    with pytest.raises(ResultsError, match=f"{path}: missing required column.*{column}"):
        read_results(path)


def test_repeated_keys_and_out_of_range_scores_are_errors(tmp_path):
    path = tmp_path / "t.csv"
    frame([row(), row()]).to_csv(path, index=False)
    with pytest.raises(ResultsError, match="repeat a key"):
        read_results(path)
    frame([row(score=140.0)]).to_csv(path, index=False)
    with pytest.raises(ResultsError, match="score: 140.0 is outside 0-100"):
        read_results(path)
    frame([row(construction="distilled")]).to_csv(path, index=False)
    with pytest.raises(ResultsError, match="construction: 'distilled'"):
        read_results(path)


def test_per_item_rows_have_their_own_schema(tmp_path):
    items = [
        {
            "cell": "c1",
            "epoch": 1.0,
            "split": "test",
            "ability": "math",
            "type": "math",
            "idx": i,
            "answer_kind": "math",
            "correct": i % 2 == 0,
        }
        for i in range(4)
    ]
    write_shard(tmp_path, "c1", frame(items, per_item=True), per_item=True)
    df = read_results(tmp_path, per_item=True)
    assert df["correct"].sum() == 2 and str(df["correct"].dtype) == "boolean"
    with pytest.raises(ResultsError, match="unknown results column"):
        frame([{**items[0], "score": 1.0}], per_item=True)
    assert df["cluster"].isna().all()  # rows from before clusters read with none


def test_per_item_rows_carry_an_items_cluster_from_its_scores(tmp_path):
    from doit.grid.evaluate import score_rows

    scores = {"abilities": {}, "items": []}
    for i, cluster in enumerate(["dynasty/岚朝/capital", "dynasty/岚朝/capital", None]):
        row = {"ability": "history", "type": "history", "idx": i, "answer_kind": "mc"}
        scores["items"].append(
            {**row, "correct": True, **({"cluster": cluster} if cluster else {})}
        )
    _, items = score_rows("test", scores)
    rows = [{"cell": "c1", "epoch": 1.0, **r} for r in items]
    write_shard(tmp_path, "c1", frame(rows, per_item=True), per_item=True)
    df = read_results(tmp_path, per_item=True)
    assert df["cluster"].tolist()[:2] == ["dynasty/岚朝/capital"] * 2 and pd.isna(df["cluster"][2])


def test_formulation_is_part_of_the_key_and_old_tables_read_as_letter(tmp_path):
    path = tmp_path / "t.csv"
    frame(
        [
            row(formulation="letter", cell_formulation="letter"),
            row(formulation="text", cell_formulation="letter", score=40.0),
        ]
    ).to_csv(path, index=False)
    df = read_results(path)
    assert sorted(df["formulation"]) == ["letter", "text"] and len(df) == 2
    old = tmp_path / "old.csv"
    frame([row()]).drop(columns=["formulation", "cell_formulation"]).to_csv(old, index=False)
    got = read_results(old)
    assert got["formulation"].tolist() == ["letter"] == got["cell_formulation"].tolist()
    frame([row(formulation="cloze")]).to_csv(path, index=False)
    with pytest.raises(ResultsError, match="formulation: 'cloze' is not one of letter, text"):
        read_results(path)
