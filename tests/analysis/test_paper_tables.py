"""doit/analysis/paper_tables.csv: the study's data-mix benchmark table (7B), tidy long format.

Source: the data-mix table of Song et al. (COLING 2025), copied in
/work/shared/reference/doit-study.md ("AGIEval and CMMLU, epochs 5 / 10 / 15").
"""

import csv
from pathlib import Path

TABLE = Path(__file__).resolve().parents[2] / "doit" / "analysis" / "paper_tables.csv"
SETTINGS = {
    "baseline 10k",
    "reconstruct 10k",
    "maximum 40k",
    "maximum + 2.56k synthetic",
    "maximum + 41k synthetic",
}


def rows() -> list[dict]:
    with open(TABLE, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def test_paper_table_is_a_full_tidy_grid():
    table = rows()
    assert list(table[0]) == ["setting", "benchmark", "shots", "epoch", "score"]
    assert len(table) == 5 * 2 * 2 * 3 == 60
    keys = {(r["setting"], r["benchmark"], int(r["shots"]), int(r["epoch"])) for r in table}
    assert len(keys) == 60
    assert {k[0] for k in keys} == SETTINGS
    assert {k[1] for k in keys} == {"agieval", "cmmlu"}
    assert {k[2] for k in keys} == {0, 5} and {k[3] for k in keys} == {5, 10, 15}
    assert all(0 < float(r["score"]) < 100 for r in table)


def test_paper_table_spot_values():
    score = {
        (r["setting"], r["benchmark"], int(r["shots"]), int(r["epoch"])): float(r["score"])
        for r in rows()
    }
    assert score[("baseline 10k", "agieval", 0, 5)] == 31.59
    assert score[("reconstruct 10k", "cmmlu", 0, 10)] == 36.85
    assert score[("maximum + 2.56k synthetic", "agieval", 0, 15)] == 39.88
    assert score[("maximum + 41k synthetic", "cmmlu", 5, 15)] == 35.17
