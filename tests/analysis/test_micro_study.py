"""studies/micro_study/targets.py: valid+test pooled, seeds averaged, paired CIs, the checks."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from doit.grid.results import frame, write_shard

REPO = Path(__file__).resolve().parents[2]
ABILITIES = ("biology", "history", "chinese", "code", "creative_writing", "understanding",
             "role_play", "reasoning", "math", "ethics")  # fmt: skip
CHANCE = {a: 0.25 for a in ABILITIES} | {"math": 0.0, "ethics": 0.2}


def targets_module():
    spec = importlib.util.spec_from_file_location(
        "targets", REPO / "studies" / "micro_study" / "targets.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
                        items += [{"cell": cell, "epoch": 5.0, "split": split, "ability": ability,
                                   "type": ability, "idx": i, "answer_kind": "mc",
                                   "correct": bool(h)} for i, h in enumerate(hits)]  # fmt: skip
                        rows.append({"cell": cell, "base": base, "arch": "vanilla", "params": 1,
                                     "construction": "base" if n == 0 else "curated",
                                     "n_per_ability": n, "n_total": 10 * n, "seed": seed,
                                     "epoch": 5.0, "step": n, "split": split, "ability": ability,
                                     "score": 100 * hits.mean(), "n_items": 100,
                                     "chance": 100 * CHANCE[ability]})  # fmt: skip
                write_shard(study, cell, frame(items, per_item=True), per_item=True)
                write_shard(study, cell, frame(rows))


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("micro_study")
    write_study(root / "study", np.random.default_rng(0))
    truth = {a: {"chance": CHANCE[a], "learnable": a not in ("role_play", "ethics"),
                 "expected_plateau": {"role_play": 0.5, "ethics": 0.25}.get(a)}
             for a in ABILITIES}  # fmt: skip
    (root / "data").mkdir()
    (root / "data" / "ground_truth.json").write_text(json.dumps({"abilities": truth}))
    return root


def test_scores_pool_valid_and_test_and_average_the_seeds(study):
    t = targets_module()
    wide = t.item_matrix(study / "study")
    assert wide.shape == (16, 10 * 200)  # 2 bases x 4 n x 2 seeds; 200 items per ability
    boot = t.bootstrap(wide, np.random.default_rng(0), 200)
    point, reps = boot["biology"]
    by_hand = wide["biology"].loc[("big", 256)].to_numpy().mean() * 100
    assert point[("big", 256)] == pytest.approx(by_hand)
    assert reps.shape == (200, 8)
    lo, hi = t.ci(reps[("big", 256)].to_numpy())
    assert lo < point[("big", 256)] < hi and hi - lo < 12  # 400 answers: a CI of a few points


def test_the_checks_find_what_was_planted(study, capsys):
    t = targets_module()
    assert t.main([str(study / "study"), "--data", str(study / "data"), "--small", "small",
                   "--large", "big", "--replicates", "300", "--out", str(study / "out")]) == 0  # fmt: skip
    report = (study / "out" / "targets.md").read_text()
    checks = {line[6:].split(":")[0]: line[3] for line in report.splitlines() if line[:3] == "- ["}
    assert checks["size responds"] == "x"  # 10 points planted on 400 paired answers
    assert checks["data responds"] == "x"  # +0.3 from n = 4 to n = 256
    assert checks["plateau"] == "x"  # the last plateau check: creative_writing 64 vs 256 (+2)
    assert "- [-]" not in report  # every compared cell is present
