"""Value residual at micro scale: validation loss vs non-embedding parameters, per architecture.

```bash
python -m doit.train.ladder --out runs/ladder --seeds 0 1 2
python studies/value_residual_micro.py runs/ladder --out runs/ladder/analysis
```

Reads the "end" row of every ``<ladder>/<arch>_<size>/seed<k>/metrics.jsonl`` (the final
validation loss) and writes to ``--out``:

- ``table.csv``: per (arch, size): seeds, non-embedding parameters, final valid loss mean and
  SD over seeds, and the paired difference arch - vanilla (same seed, hence same data order)
  as mean and SD over seeds, with ``beyond_2sd`` = |mean| > 2 SD.
- ``fits.csv``: per arch, the least-squares line log(loss) = intercept + slope * log(N) over
  every (size, seed) point; for each non-vanilla arch the equal-loss parameter ratio N_arch /
  N_vanilla at ``n_ref`` (the geometric mean of vanilla's sizes, the middle of the fit range), its
  ``fewer_params_pct`` = 100 (1 - ratio) and a 95% bootstrap CI over seeds (seeds resampled with
  replacement, the same draw for every arch, so pairs stay paired).
- ``loss_vs_params.png``: the two panels; ``verdict.txt``: the printed checks and verdicts.

The checks: every run's final validation loss at least 1 nat below the corpus's unigram baseline
(the lower of the training unigram entropy and the valid tokens' unigram cross-entropy, both
written by the pretraining run), and, per arch, a mean loss that falls at every step up in size.

The paper's numbers, for comparison: ~10.4% fewer parameters at equal loss for the fixed
0.5/0.5 ResFormer (an earlier version) and 16.11% in v5 (variant and fit range unverified), at
82M-468M parameters and 20B tokens. The ladder's default resformer is the fixed 0.5/0.5 one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from doit.train.rundir import read_metrics

BASE = "vanilla"
SIZE_ORDER = ("xs", "s", "m", "l")
PAPER = "paper: ~10.4% (fixed 0.5/0.5, earlier version), 16.11% (v5 headline, variant unverified)"


def load_runs(ladders: list[Path]) -> pd.DataFrame:
    """One row per finished run: arch, size, seed, parameter counts, valid_loss, tokens."""
    rows = []
    for ladder in ladders:
        for path in sorted(Path(ladder).glob("*/seed*/metrics.jsonl")):
            end = [r for r in read_metrics(path.parent) if r["kind"] == "end"]
            if not end:
                print(
                    f"warning: {path.parent} is unfinished (no end row); left out", file=sys.stderr
                )
                continue
            keep = ("arch", "size", "seed", "params_non_embedding", "params_total",
                    "valid_loss", "tokens", "wall_s")  # fmt: skip
            unigram = [
                end[-1][k] for k in ("unigram_entropy", "unigram_valid_loss") if k in end[-1]
            ]
            unigram = min(unigram) if unigram else np.nan  # older runs did not record it
            rows.append({**{k: end[-1][k] for k in keep}, "unigram_loss": unigram})
    if not rows:
        raise FileNotFoundError(f"no finished runs (metrics.jsonl with an end row) under {ladders}")
    return pd.DataFrame(rows)


def paired_differences(df: pd.DataFrame, base: str = BASE) -> pd.DataFrame:
    """arch - base final valid loss for every (arch, size, seed) that base also has."""
    base_loss = df[df.arch == base].set_index(["size", "seed"])["valid_loss"]
    other = df[df.arch != base].join(base_loss.rename("base_loss"), on=["size", "seed"])
    other = other.dropna(subset=["base_loss"])
    return other.assign(diff=other.valid_loss - other.base_loss)


def summarize(df: pd.DataFrame, base: str = BASE) -> pd.DataFrame:
    """The table: one row per (arch, size)."""
    g = df.groupby(["arch", "size"])
    table = g.agg(n_seeds=("seed", "nunique"), params_non_embedding=("params_non_embedding", "first"),
                  params_total=("params_total", "first"), valid_loss_mean=("valid_loss", "mean"),
                  valid_loss_sd=("valid_loss", "std"))  # fmt: skip
    d = paired_differences(df, base).groupby(["arch", "size"])["diff"]
    table = table.join(d.mean().rename(f"diff_vs_{base}_mean")).join(
        d.std().rename(f"diff_vs_{base}_sd")
    )
    mean, sd = table[f"diff_vs_{base}_mean"], table[f"diff_vs_{base}_sd"]
    table["beyond_2sd"] = (mean.abs() > 2 * sd).where(sd.notna())
    table = table.reset_index()
    order = table.arch.map(lambda a: (a != base, a))
    table = table.assign(_order=order).sort_values(["_order", "params_non_embedding"])
    return table.drop(columns="_order").reset_index(drop=True)


def fit_line(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """Least squares y = intercept + slope x; returns (intercept, slope, r2)."""
    slope, intercept = np.polyfit(x, y, 1)
    resid = y - (intercept + slope * x)
    ss_tot = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float((resid**2).sum()) / ss_tot if ss_tot > 0 else 1.0
    return float(intercept), float(slope), r2


def fit_lines(df: pd.DataFrame) -> dict[str, tuple[float, float, float]]:
    """Per arch: log(valid_loss) vs log(non-embedding params) over every (size, seed) point."""
    out = {}
    for arch, g in df.groupby("arch"):
        if g["size"].nunique() >= 2:
            out[arch] = fit_line(np.log(g.params_non_embedding.to_numpy(float)),
                                 np.log(g.valid_loss.to_numpy(float)))  # fmt: skip
    return out


def equal_loss_ratio(base_fit, arch_fit, n_ref: float) -> float:
    """N_arch / n_ref, where the arch's line reaches the base line's loss at n_ref."""
    (a0, b0, _), (a1, b1, _) = base_fit, arch_fit
    log_loss = a0 + b0 * np.log(n_ref)
    return float(np.exp((log_loss - a1) / b1) / n_ref)


def reference_params(df: pd.DataFrame, base: str = BASE) -> float:
    """The geometric mean of the base's sizes: the middle of the fit range."""
    sizes = df[df.arch == base].groupby("size").params_non_embedding.first()
    return float(np.exp(np.log(sizes.to_numpy(float)).mean()))


def bootstrap_ratio(df, arch, n_ref, base=BASE, draws=2000, seed=0) -> tuple[float, float]:
    """95% percentile CI of the equal-loss ratio, resampling seeds (the same draw for all archs)."""
    seeds = np.array(sorted(set(df[df.arch == base].seed) & set(df[df.arch == arch].seed)))
    if len(seeds) < 2:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    by_seed = {s: df[df.seed == s] for s in seeds}
    ratios = []
    for _ in range(draws):
        sample = pd.concat([by_seed[s] for s in rng.choice(seeds, size=len(seeds))])
        fits = fit_lines(sample)
        ratios.append(equal_loss_ratio(fits[base], fits[arch], n_ref))
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    return float(lo), float(hi)


def fit_table(df: pd.DataFrame, base: str = BASE, draws: int = 2000) -> pd.DataFrame:
    fits, n_ref = fit_lines(df), reference_params(df, base)
    rows = []
    for arch, (a, b, r2) in sorted(fits.items()):
        row = {"arch": arch, "intercept": a, "slope": b, "r2": r2,
               "n_points": int((df.arch == arch).sum()), "n_seeds": df[df.arch == arch].seed.nunique()}  # fmt: skip
        if arch != base and base in fits:
            ratio = equal_loss_ratio(fits[base], fits[arch], n_ref)
            lo, hi = bootstrap_ratio(df, arch, n_ref, base, draws)
            sizes = df[df.arch == arch].params_non_embedding
            note = ratio_note(fits[base][1], b, ratio * n_ref, sizes.min(), sizes.max(), base)
            row.update(n_ref=n_ref, param_ratio=ratio, fewer_params_pct=100 * (1 - ratio),
                       ratio_ci_low=lo, ratio_ci_high=hi, ratio_note=note)  # fmt: skip
        rows.append(row)
    return pd.DataFrame(rows)


def ratio_note(base_slope, slope, n_needed, n_min, n_max, base=BASE) -> str:
    """Why an equal-loss ratio is not a measurement ("" when it is one)."""
    if base_slope >= 0 or slope >= 0:
        return (f"not measurable: the loss does not fall with size (slopes {base} "
                f"{base_slope:+.4f}, arch {slope:+.4f})")  # fmt: skip
    if not n_min <= n_needed <= n_max:
        n_text = f"{n_needed:,.0f}" if n_needed >= 1 else f"{n_needed:.3g}"
        return (f"extrapolated: the arch would need N = {n_text}, outside its ladder "
                f"({n_min:,.0f}..{n_max:,.0f})")  # fmt: skip
    return ""


def overall_difference(df: pd.DataFrame, arch: str, base: str = BASE) -> tuple[float, float, int]:
    """Per seed, arch - base averaged over sizes; then mean and SD over seeds (and their count)."""
    d = paired_differences(df, base)
    per_seed = d[d.arch == arch].groupby("seed")["diff"].mean()
    return float(per_seed.mean()), float(per_seed.std()), int(per_seed.size)


def verdict(df: pd.DataFrame, table: pd.DataFrame, fits: pd.DataFrame, arch: str,
            base: str = BASE) -> str:  # fmt: skip
    """The printed verdict for one arch against the base."""
    rows = table[table.arch == arch]
    col = f"diff_vs_{base}"
    sizes = ", ".join(
        f"{r['size']} {r[col + '_mean']:+.4f} +- {r[col + '_sd']:.4f}" for _, r in rows.iterrows()
    )
    mean, sd, n = overall_difference(df, arch, base)
    lines = [f"{arch} - {base}, final valid loss (nats), paired by seed, mean +- SD over seeds:",
             f"  per size: {sizes}", f"  all sizes: {mean:+.4f} +- {sd:.4f} ({n} seed{'s' if n != 1 else ''})"]  # fmt: skip
    fit = fits[fits.arch == arch]
    if not fit.empty and "param_ratio" in fit:
        f = fit.iloc[0].fillna({"ratio_note": ""})
        head = f"  equal-loss parameter ratio at N = {f.n_ref:,.0f}:"
        if f.ratio_note:
            lines.append(f"{head} {f.ratio_note} (the lines give {f.param_ratio:.3g}; {PAPER})")
        else:
            change = f"{abs(f.fewer_params_pct):.1f}% {'fewer' if f.param_ratio <= 1 else 'more'}"
            lines.append(f"{head} {f.param_ratio:.3f} ({change} parameters than {base}), 95% "
                         f"bootstrap CI over seeds [{f.ratio_ci_low:.3f}, {f.ratio_ci_high:.3f}]; "
                         f"{PAPER}")  # fmt: skip
    lines.append("  verdict: " + _verdict_word(arch, base, mean, sd, n))
    return "\n".join(lines)


def ladder_checks(df: pd.DataFrame, table: pd.DataFrame, margin: float = 1.0) -> str:
    """The ladder's sanity checks: far below the unigram baseline, and loss falling with size."""
    gap = df.unigram_loss - df.valid_loss
    if gap.isna().all():
        lines = ["  unigram baseline: not recorded by these runs"]
    else:
        worst = df.loc[gap.idxmin()]
        ok = "PASS" if (gap >= margin).all() else "FAIL"
        lines = [f"  {ok}: every run >= {margin:g} nat below the unigram baseline "
                 f"({df.unigram_loss.min():.3f} nats); the closest is {worst.arch} {worst['size']} "
                 f"seed {worst.seed} at {worst.valid_loss:.4f} ({gap.min():.3f} below)"]  # fmt: skip
    for arch, rows in table.groupby("arch", sort=False):
        rows = rows.sort_values("params_non_embedding")
        means = rows.valid_loss_mean.to_numpy()
        ok = "PASS" if len(means) > 1 and (np.diff(means) < 0).all() else "FAIL"
        path = " -> ".join(f"{size} {mean:.4f}" for size, mean in zip(rows["size"], means))
        lines.append(f"  {ok}: {arch} mean loss falls with size: {path}")
    return "ladder checks:\n" + "\n".join(lines)


def _verdict_word(arch, base, mean, sd, n) -> str:
    if n < 2 or not np.isfinite(sd):
        return f"one seed only: no SD, so no verdict; run more seeds ({arch} {mean:+.4f} nats)"
    if abs(mean) <= 2 * sd:
        return (
            f"the micro gap ({mean:+.4f} nats) is within 2 SD ({2 * sd:.4f}) of seed-to-seed "
            f"variation: no reliable difference between {arch} and {base} at this scale"
        )
    better = "beats" if mean < 0 else "is worse than"
    return f"{arch} {better} {base} at micro scale ({mean:+.4f} +- {sd:.4f} nats, beyond 2 SD)"


def plot(df: pd.DataFrame, table: pd.DataFrame, fits: pd.DataFrame, path: Path, base=BASE) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for i, (arch, rows) in enumerate(table.groupby("arch")):
        color = f"C{i}"
        left.errorbar(rows.params_non_embedding, rows.valid_loss_mean, yerr=rows.valid_loss_sd,
                      fmt="o", color=color, capsize=3, label=arch)  # fmt: skip
        fit = fits[fits.arch == arch]
        if not fit.empty:
            n = np.geomspace(rows.params_non_embedding.min(), rows.params_non_embedding.max(), 50)
            a, b = fit.iloc[0].intercept, fit.iloc[0].slope
            left.plot(
                n, np.exp(a + b * np.log(n)), color=color, lw=1, label=f"{arch} fit, slope {b:.3f}"
            )
        if arch != base:
            right.errorbar(rows.params_non_embedding, rows[f"diff_vs_{base}_mean"],
                           yerr=rows[f"diff_vs_{base}_sd"], fmt="o-", color=color, capsize=3,
                           label=f"{arch} - {base}")  # fmt: skip
    left.set(xscale="log", yscale="log", xlabel="non-embedding parameters",
             ylabel="final validation loss (nats)", title="loss vs size (mean +- SD over seeds)")  # fmt: skip
    right.axhline(0, color="grey", lw=0.8)
    right.set(xscale="log", xlabel="non-embedding parameters (of the arch)",
              ylabel=f"loss difference vs {base} (nats)", title="paired by seed: mean +- SD")  # fmt: skip
    plain = matplotlib.ticker.FormatStrFormatter("%.2f")
    left.yaxis.set_major_formatter(plain)
    left.yaxis.set_minor_formatter(plain)
    left.legend(fontsize=7)
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("ladders", nargs="+", type=Path, help="ladder dirs (doit.train.ladder --out)")
    p.add_argument("--out", type=Path, required=True, help="where the table, fits and plot go")
    p.add_argument("--draws", type=int, default=2000, help="bootstrap resamples")
    a = p.parse_args(argv)
    try:
        df = load_runs(a.ladders)
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if BASE not in set(df.arch):
        print(f"error: no {BASE} runs to compare against", file=sys.stderr)
        return 2
    a.out.mkdir(parents=True, exist_ok=True)
    table, fits = summarize(df), fit_table(df, draws=a.draws)
    table.to_csv(a.out / "table.csv", index=False)
    fits.to_csv(a.out / "fits.csv", index=False)
    plot(df, table, fits, a.out / "loss_vs_params.png")
    verdicts = [verdict(df, table, fits, arch) for arch in sorted(set(df.arch) - {BASE})]
    text = "\n\n".join([ladder_checks(df, table), *verdicts])
    (a.out / "verdict.txt").write_text(text + "\n", encoding="utf-8")
    print(table.to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    print(f"\n{text}\n\nwrote {a.out}/table.csv, fits.csv, loss_vs_params.png, verdict.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
