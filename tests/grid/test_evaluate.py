"""Rows from scores: items without output counted per ability, benchmark rows."""

from __future__ import annotations

from doit.grid.evaluate import benchmark_rows, score_rows


def test_rows_carry_the_items_without_output_and_the_eval_time():
    scores = {"abilities": {"math": {"score": 0.0, "n_items": 1, "chance": 0.0}},
              "items": [], "n_no_output": {"ceval_x": 1, "math": 1}, "eval_s": 1.5}  # fmt: skip
    (row,), _ = score_rows("test", scores)
    assert row["n_no_output"] == 1 and row["eval_s"] == 1.5


def test_benchmark_rows_take_the_macro_score_and_all_items():
    bench = {"benchmarks": {"cmmlu": {"5": {"macro": 41.0, "micro": 40.0, "subjects": {
        "a": {"acc": 40.0, "n": 100}, "b": {"acc": 42.0, "n": 50}}}}}}  # fmt: skip
    (row,) = benchmark_rows("cmmlu-5shot", bench)
    assert row == {"split": "cmmlu-5shot", "ability": "cmmlu", "score": 41.0, "n_items": 150,
                   "chance": 25.0}  # fmt: skip
