"""The micro study's scores, valid and test pooled, and issue #12's targets checked on them.

    python studies/micro_study/targets.py runs/study/micro_study [--data data/generated/micro]

Reads a study folder written by ``python -m doit.grid run`` (its per-item rows), keeps each
cell's last scored epoch, pools the valid and test items (200 per ability), averages the
seeds, and draws 95% CIs from an item bootstrap: one resample of item ids per replicate,
shared by every cell, so differences between cells are paired. Prints the ability x n x base
table (points, with chance) and each target with its numbers; ``--out`` also writes
``scores.csv`` and ``targets.md``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from doit.grid import read_results
from doit.io import read_json

SPLITS = ("valid", "test")
KNOWLEDGE_SIZE = ("biology", "history", "chinese", "code")
REPLICATES = 2000


def item_matrix(study: Path) -> pd.DataFrame:
    """Correct as 0/1: rows (base, n, seed), columns (ability, split, idx); last epoch."""
    cells = read_results(study)
    cells = cells[cells.construction.isin(["base", "curated"]) & cells.excluded_ability.isna()]
    cells = cells[["cell", "base", "n_per_ability", "seed", "params"]].drop_duplicates("cell")
    items = read_results(study, per_item=True)
    items = items[items.split.isin(SPLITS) & items.cell.isin(cells.cell)]
    last = items.groupby("cell").epoch.transform("max")
    items = items[(items.epoch == last) | items.epoch.isna()].merge(cells, on="cell")
    items["correct"] = items.correct.astype(float)
    wide = items.pivot_table(index=["base", "n_per_ability", "seed"],
                             columns=["ability", "split", "idx"], values="correct")  # fmt: skip
    return wide


def bootstrap(wide: pd.DataFrame, rng: np.random.Generator, replicates: int) -> dict:
    """Per ability: (point scores per (base, n), replicate scores (replicates x cells))."""
    out = {}
    groups = wide.index.droplevel("seed")
    for ability in wide.columns.get_level_values("ability").unique():
        block = wide[ability]  # rows (base, n, seed), columns (split, idx)
        values = block.to_numpy()
        point = pd.Series(np.nanmean(values, axis=1) * 100, index=block.index)
        point = point.groupby(level=["base", "n_per_ability"]).mean()
        draws = rng.integers(0, values.shape[1], size=(replicates, values.shape[1]))
        reps = np.stack([np.nanmean(values[:, d], axis=1) * 100 for d in draws])  # R x rows
        reps = pd.DataFrame(reps.T, index=groups).groupby(level=[0, 1]).mean().T
        out[ability] = (point, reps[point.index])
    return out


def ci(reps: np.ndarray) -> tuple[float, float]:
    return float(np.percentile(reps, 2.5)), float(np.percentile(reps, 97.5))


def score_table(boot: dict, truth: dict) -> pd.DataFrame:
    rows = []
    for ability, (point, reps) in boot.items():
        chance = 100 * truth.get(ability, {}).get("chance", float("nan"))
        for (base, n), v in point.items():
            lo, hi = ci(reps[(base, n)].to_numpy())
            rows.append({"ability": ability, "base": base, "n": int(n), "score": round(v, 1),
                         "lo": round(lo, 1), "hi": round(hi, 1), "chance": round(chance, 1),
                         "above_chance": round(v - chance, 1)})  # fmt: skip
    return pd.DataFrame(rows).sort_values(["ability", "base", "n"], ignore_index=True)


def diff(boot, ability, a, b) -> tuple[float, float, float]:
    """Score of cell ``a`` minus cell ``b`` ((base, n) pairs), with its paired 95% CI."""
    point, reps = boot[ability]
    d = reps[a].to_numpy() - reps[b].to_numpy()
    return (float(point[a] - point[b]), *ci(d))


def _fmt(diffs: dict) -> str:
    return "; ".join(f"{a} {d:+.1f} [{lo:+.1f}, {hi:+.1f}]" for a, (d, lo, hi) in diffs.items())


def _learnable(boot, truth, table, small, large, lo_n, hi_n):
    big = table[(table.base == large) & (table.n == hi_n)].set_index("ability")
    learn = [a for a in boot if big.loc[a, "above_chance"] >= 15]
    return len(learn) >= 7, f"{len(learn)}: {', '.join(learn)}"


def _data(boot, truth, table, small, large, lo_n, hi_n):
    gains = {a: diff(boot, a, (large, hi_n), (large, lo_n)) for a in boot if truth[a]["learnable"]}
    ok = [a for a, (d, lo, _) in gains.items() if d >= 10 and lo > 0]
    return len(ok) >= 5, _fmt(gains)


def _size(boot, truth, table, small, large, lo_n, hi_n):
    sizes = {a: diff(boot, a, (large, hi_n), (small, hi_n)) for a in KNOWLEDGE_SIZE}
    ok = [a for a, (d, lo, _) in sizes.items() if d >= 5 and lo > 0]
    return len(ok) >= 3, _fmt(sizes)


def _data_over_size(ability):
    def check(boot, truth, table, small, large, lo_n, hi_n):
        gain = diff(boot, ability, (large, hi_n), (large, lo_n))[0]
        gap = diff(boot, ability, (large, hi_n), (small, hi_n))[0]
        return gain > abs(gap), f"gain {gain:+.1f}, size gap {gap:+.1f}"

    return check


def _cells(rows) -> str:
    return ", ".join(f"{r.base} n={r.n}: {r.score} [{r.lo}, {r.hi}]" for r in rows.itertuples())


def _role_play(boot, truth, table, small, large, lo_n, hi_n):
    rp = table[table.ability == "role_play"]
    ok = ((rp.lo <= 50) & (rp.hi >= 50)) | (rp.score - 50).abs().le(10)
    return bool(ok.all()), _cells(rp)


def _ethics(boot, truth, table, small, large, lo_n, hi_n):
    et = table[table.ability == "ethics"]
    return bool((et.hi < 100 * truth["ethics"]["expected_plateau"] + 10).all()), _cells(et)


def _creative(boot, truth, table, small, large, lo_n, hi_n):
    cw = {b: diff(boot, "creative_writing", (b, hi_n), (b, 64)) for b in (small, large)}
    return all(abs(d) <= 5 or lo <= 0 <= hi for d, lo, hi in cw.values()), _fmt(cw)


TARGETS = (
    ("learnable: >= 7 of 10 abilities >= 15 points above chance, larger base, n = {hi}", _learnable),
    ("data responds: >= 5 learnable abilities gain >= 10 points, n = {lo} -> {hi}, CI above 0",
     _data),
    ("size responds: >= 3 of biology, history, chinese, code: the larger base ahead by >= 5 at "
     "n = {hi}, CI above 0", _size),
    ("understanding: data gain exceeds the size gap", _data_over_size("understanding")),
    ("reasoning: data gain exceeds the size gap", _data_over_size("reasoning")),
    ("plateau: role_play's CI includes 50 (or within 50 +- 10) at every n", _role_play),
    ("plateau: ethics below its planted plateau + 10 at every n", _ethics),
    ("plateau: creative_writing n = 64 vs {hi} within 5 points or CI includes 0", _creative),
)  # fmt: skip


def check_targets(boot: dict, truth: dict, small: str, large: str, lo_n: int, hi_n: int) -> list:
    """[(target, passed or None when the study lacks its cells, detail)] for issue #12."""
    table = score_table(boot, truth)
    results = []
    for name, check in TARGETS:
        try:
            ok, detail = check(boot, truth, table, small, large, lo_n, hi_n)
        except KeyError as missing:  # a (base, n) cell the target compares is not in the study
            ok, detail = None, f"not measured: no cell {missing}"
        results.append((name.format(lo=lo_n, hi=hi_n), ok, detail))
    return results


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("study", type=Path)
    p.add_argument("--data", type=Path, default=Path("data/generated/micro"))
    p.add_argument("--small", default="vanilla_xs")
    p.add_argument("--large", default="vanilla_s")
    p.add_argument("--lo-n", type=int, default=4)
    p.add_argument("--hi-n", type=int, default=256)
    p.add_argument("--out", type=Path)
    p.add_argument("--replicates", type=int, default=REPLICATES)
    args = p.parse_args(argv)
    truth = read_json(args.data / "ground_truth.json")["abilities"]
    wide = item_matrix(args.study)
    boot = bootstrap(wide, np.random.default_rng(0), args.replicates)
    boot = {a: v for a, v in boot.items() if a in truth}
    table = score_table(boot, truth)
    view = table.pivot_table(index=["ability", "chance"], columns=["base", "n"], values="score")
    print(view.to_string())
    lines = []
    bases = set(table.base)
    if {args.small, args.large} <= bases:
        for name, ok, detail in check_targets(boot, truth, args.small, args.large, args.lo_n,
                                              args.hi_n):  # fmt: skip
            mark = {True: "x", False: " ", None: "-"}[ok]
            lines.append(f"- [{mark}] {name}: {detail}")
        print("\n".join(lines))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        table.to_csv(args.out / "scores.csv", index=False)
        md = ["| ability | chance | " + " | ".join(f"{b} n={n}" for b, n in view.columns) + " |",
              "|---|---|" + "---|" * len(view.columns)]  # fmt: skip
        for (ability, chance), row in view.iterrows():
            md.append(f"| {ability} | {chance:.1f} | " + " | ".join(f"{v:.1f}" for v in row) + " |")
        (args.out / "targets.md").write_text("\n".join(md + [""] + lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
