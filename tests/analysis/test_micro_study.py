"""The micro study's scores (doit.analysis.targets over the library's selection and bootstrap):
valid and test pooled as distinct items, seeds pooled, paired CIs, the targets; and the rerun
script studies/micro_study/targets.py end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from doit.analysis import targets
from doit.analysis.bootstrap import bootstrap_counts
from doit.analysis.select import select_checkpoints
from doit.grid.results import frame, read_results, write_shard

REPO = Path(__file__).resolve().parents[2]
ABILITIES = (
    "biology",
    "history",
    "chinese",
    "code",
    "creative_writing",
    "understanding",
    "role_play",
    "reasoning",
    "math",
    "ethics",
)
CHANCE = {a: 0.25 for a in ABILITIES} | {"math": 0.0, "ethics": 0.2}


def accuracy(ability: str, base: str, n: int) -> float:
    """Planted: every ability climbs with n and the larger base is 10 points ahead, except
    creative_writing (saturated from n = 64) and the two plateaus."""
    if ability == "creative_writing":
        return 0.9 if n >= 64 else 0.5
    if ability == "role_play":
        return 0.5
    if ability == "ethics":
        return 0.2
    return min(0.95, 0.3 + 0.1 * np.log2(1 + n) / 2 + (0.1 if base == "big" else 0.0))


def write_study(study: Path, rng: np.random.Generator) -> None:
    for base in ("small", "big"):
        for n in (0, 4, 64, 256):
            for seed in (0, 1):
                cell = f"{base}-n{n:04d}-s{seed}"
                rows, items = [], []
                for ability in ABILITIES:
                    for split in ("valid", "test"):
                        hits = rng.random(100) < accuracy(ability, base, n)
                        items += [
                            {
                                "cell": cell,
                                "epoch": 5.0,
                                "split": split,
                                "ability": ability,
                                "type": ability,
                                "idx": i,
                                "answer_kind": "mc",
                                "correct": bool(h),
                            }
                            for i, h in enumerate(hits)
                        ]
                        rows.append(
                            {
                                "cell": cell,
                                "base": base,
                                "arch": "vanilla",
                                "params": 1,
                                "construction": "base" if n == 0 else "curated",
                                "n_per_ability": n,
                                "n_total": 10 * n,
                                "seed": seed,
                                "epoch": 5.0,
                                "step": n,
                                "split": split,
                                "ability": ability,
                                "score": 100 * hits.mean(),
                                "n_items": 100,
                                "chance": 100 * CHANCE[ability],
                            }
                        )
                write_shard(study, cell, frame(items, per_item=True), per_item=True)
                write_shard(study, cell, frame(rows))


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("micro_study")
    write_study(root / "study", np.random.default_rng(0))
    truth = {
        a: {
            "chance": CHANCE[a],
            "learnable": a not in ("role_play", "ethics"),
            "expected_plateau": {"role_play": 0.5, "ethics": 0.25}.get(a),
        }
        for a in ABILITIES
    }
    (root / "data").mkdir()
    (root / "data" / "ground_truth.json").write_text(json.dumps({"abilities": truth}))
    return root


@pytest.fixture(scope="module")
def counts(study):
    return targets.micro_scores(study / "study", replicates=300)


def truth(study) -> dict:
    return json.loads((study / "data" / "ground_truth.json").read_text())["abilities"]


def test_scores_pool_valid_and_test_as_distinct_items_and_pool_the_seeds(study, counts):
    assert counts.k.shape == (300, 10 * 8)  # 10 abilities x 2 bases x 4 n
    # 100 valid + 100 test items (the same idx in both splits: distinct items) x 2 seeds
    assert (counts.points["m"] == 400).all() and (counts.points["seeds"] == 2).all()
    items = read_results(study / "study", per_item=True)
    mine = items[(items.ability == "biology") & items.cell.str.startswith("big-n0256")]
    i = counts.column("biology", base="big", n_per_ability=256)
    score, lo, hi = counts.score(i).ci()
    assert len(mine) == 400 and score == pytest.approx(100 * mine.correct.mean())
    assert lo < score < hi and hi - lo < 12  # 400 answers: a CI of a few points
    # the library's default scores the test split alone
    test_only = bootstrap_counts(
        select_checkpoints(read_results(study / "study"), "last"), items, replicates=50
    )
    assert (test_only.points["m"] == 200).all()


def test_differences_are_paired_over_both_splits():
    """Cell b answers what a answers plus 10 of a's wrong items per split: one shared draw of
    the 200 pooled items gives a narrow CI for b - a; independent draws would not."""
    rng = np.random.default_rng(1)
    rows, items = [], []
    for split in ("valid", "test"):
        a = rng.random(100) < 0.5
        b = a.copy()
        b[np.flatnonzero(~a)[:10]] = True
        for cell, hits, n in (("a", a, 4), ("b", b, 16)):
            items += [
                {
                    "cell": cell,
                    "epoch": 5.0,
                    "split": split,
                    "ability": "biology",
                    "type": "biology",
                    "idx": i,
                    "correct": bool(h),
                }
                for i, h in enumerate(hits)
            ]
            rows.append(
                {
                    "cell": cell,
                    "base": "s",
                    "arch": "vanilla",
                    "params": 1,
                    "construction": "curated",
                    "n_per_ability": n,
                    "n_total": n,
                    "seed": 0,
                    "epoch": 5.0,
                    "step": 1,
                    "split": split,
                    "ability": "biology",
                    "score": 100 * hits.mean(),
                    "n_items": 100,
                    "chance": 25.0,
                }
            )
    selected = select_checkpoints(frame(rows), "last", splits=targets.SPLITS)
    counts = bootstrap_counts(selected, frame(items, per_item=True), 500, splits=targets.SPLITS)
    d, lo, hi = targets.diff(counts, "biology", ("s", 16), ("s", 4))
    assert d == pytest.approx(10.0) and 4 < lo < d < hi < 16  # unpaired: lo near 0
    assert counts.difference(0, 0).ci() == (0.0, 0.0, 0.0)
    with pytest.raises(KeyError, match="n_per_ability=64"):
        targets.diff(counts, "biology", ("s", 64), ("s", 4))


def test_the_checks_find_what_was_planted(study, counts):
    checks = {
        name.split(":")[0]: ok
        for name, ok, _ in targets.check_targets(counts, truth(study), "small", "big", 4, 256)
    }
    assert checks["size responds"] is True  # 10 points planted on 400 paired answers
    assert checks["data responds"] is True  # +0.3 from n = 4 to n = 256
    assert checks["plateau"] is True  # the last plateau check: creative_writing 64 vs 256 (+2)
    assert None not in checks.values()  # every compared cell is present
    missing = targets.check_targets(counts, truth(study), "small", "huge", 4, 256)
    assert [ok for name, ok, _ in missing if name.startswith("size")] == [None]


def test_the_rerun_script_writes_the_table_and_the_checks(study):
    out = study / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "studies" / "micro_study" / "targets.py"),
            str(study / "study"),
            "--data",
            str(study / "data"),
            "--small",
            "small",
            "--large",
            "big",
            "--replicates",
            "100",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    report = (out / "targets.md").read_text()
    assert report == proc.stdout and "| biology | 25.0 |" in report
    assert "- [x] size responds" in report and "- [-]" not in report
    assert len((out / "scores.csv").read_text().splitlines()) == 1 + 10 * 8


def test_the_text_targets_check_the_text_studys_numbers(study, counts):
    """The text set: the seven learnable abilities but math, math's own small gain, and ethics
    judged against the text formulation's plateau (here 0.25: planted 0.2, within 10)."""
    world = {
        a: {**t, "expected_plateau_text": 0.25 if a == "ethics" else None}
        for a, t in truth(study).items()
    }
    checks = targets.check_targets(counts, world, "small", "big", 4, 256, "text")
    by_name = {name: (ok, detail) for name, ok, detail in checks}
    learnable = next(v for k, v in by_name.items() if k.startswith("learnable"))
    assert learnable[0] is True and learnable[1].startswith("7 of 7")
    math = next(v for k, v in by_name.items() if "math gains" in k)
    assert math[0] is True  # planted +0.3 from n = 4 to 256
    ethics = next(k for k in by_name if k.startswith("plateau: ethics"))
    assert by_name[ethics][0] is True
    world["ethics"]["expected_plateau_text"] = 0.5  # 30 points above what ethics scores
    again = {
        n: ok for n, ok, _ in targets.check_targets(counts, world, "small", "big", 4, 256, "text")
    }
    assert again[ethics] is False
