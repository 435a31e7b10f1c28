"""A pretraining ladder's loss against size: log-log fits per architecture, seed-paired
differences against a base architecture, the equal-loss parameter ratio with a seed bootstrap,
sanity checks and a verdict (``doit analysis ladder RUNS_OR_TABLE --out DIR``).

Input, one row per finished pretraining run, read by ``load_runs`` through
`doit.grid.read_pretraining` (its one schema and unigram rule): from ladder folders (the "end"
row of every ``<ladder>/<arch>_<size>/seed<k>/metrics.jsonl``), a pretraining-only grid's
study folder or a table with its columns (``STUDY/pretraining.csv``, or a ladder's
``runs.csv``). ``analyse(runs)`` puts the rows in run-folder order and returns a ``Ladder``:

- ``table``: per (arch, size): seeds, non-embedding parameters, final valid loss mean and SD
  over seeds, and the paired difference arch - base (same seed, hence same data order) as mean
  and SD over seeds, with ``beyond_2sd`` = |mean| > 2 SD;
- ``fits``: per arch, the least-squares line log(loss) = intercept + slope * log(N) over every
  (size, seed) point; for each other arch the equal-loss parameter ratio N_arch / N_base at
  ``n_ref`` (the geometric mean of the base's sizes, the middle of the fit range), its
  ``fewer_params_pct`` = 100 (1 - ratio) and a 95% CI over seeds (the analysis's
  bias-corrected percentile interval; seeds resampled with replacement, the same draw for
  every arch, so pairs stay paired), and ``ratio_note`` when the ratio is no measurement
  (flat lines, or extrapolated outside the arch's ladder);
- ``checks``: every run's final loss at least 1 nat below the corpus's unigram baseline (the
  lower of the training unigram entropy and the valid tokens' unigram cross-entropy, both
  written by the pretraining run), and per arch a mean loss that falls at every step up in
  size; ``verdicts``: per arch against the base, in words.

The paper's numbers, for comparison: ~10.4% fewer parameters at equal loss for the fixed
0.5/0.5 ResFormer (an earlier version) and 16.11% in v5 (variant and fit range unverified), at
82M-468M parameters and 20B tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from doit.analysis.bootstrap import interval
from doit.grid import read_pretraining
from doit.io import OutputKind, atomic_write_text, mark_output, marked_or_holding

BASE = "vanilla"
PAPER = "paper: ~10.4% (fixed 0.5/0.5, earlier version), 16.11% (v5 headline, variant unverified)"
REPLICATES = 2000
# A ladder folder: its manifest.json (or, written before it had one, what `write` always writes)
LADDER = OutputKind(
    "ladder", holds=marked_or_holding("ladder", "fits.csv", "table.csv", "verdict.txt")
)


# --- input ------------------------------------------------------------------------------------
def load_runs(sources) -> pd.DataFrame:
    """The pretraining rows of every source (ladder folders, study folders, tables) together;
    ValueError naming a source that holds no finished run."""
    parts = []
    for source in sources:
        runs = read_pretraining(source)
        if runs.empty:
            raise ValueError(f"{source}: no finished pretraining runs")
        parts.append(runs)
    return pd.concat(parts, ignore_index=True)


# --- the analysis -----------------------------------------------------------------------------
@dataclass
class Ladder:
    runs: pd.DataFrame
    table: pd.DataFrame
    fits: pd.DataFrame
    checks: str
    verdicts: list[str] = field(default_factory=list)
    base: str = BASE

    @property
    def text(self) -> str:
        """verdict.txt: the checks, then one verdict per arch."""
        return "\n\n".join([self.checks, *self.verdicts])


def analyse(
    runs: pd.DataFrame, base: str = BASE, replicates: int = REPLICATES, seed: int = 0
) -> Ladder:
    if base not in set(runs.arch):
        raise ValueError(f"no {base} runs to compare against")
    sizes = runs.loc[runs.arch == base, "size"].nunique()
    if sizes < 2:
        raise ValueError(
            f"the {base} runs span {sizes} size: a ladder fits loss against size and needs "
            "finished runs at two sizes or more"
        )
    runs = in_folder_order(runs)
    table, fits = summarize(runs, base), fit_table(runs, base, replicates, seed)
    verdicts = [verdict(runs, table, fits, arch, base) for arch in sorted(set(runs.arch) - {base})]
    return Ladder(runs, table, fits, ladder_checks(runs, table), verdicts, base)


def in_folder_order(runs: pd.DataFrame) -> pd.DataFrame:
    """The rows in their run folders' order (``<arch>_<size>/seed<k>``, sorted as paths), so that
    a table in any row order gives the numbers, to the last bit, that the folders give."""
    keys = [(f"{a}_{s}", f"seed{k}") for a, s, k in zip(runs.arch, runs["size"], runs.seed)]
    order = sorted(range(len(keys)), key=keys.__getitem__)
    return runs.iloc[order].reset_index(drop=True)


def write(ladder: Ladder, out) -> list[Path]:
    """runs.csv, table.csv, fits.csv, verdict.txt and loss_vs_params.png in ``out``."""
    from doit.analysis.plots import loss_vs_params, plt

    out = Path(out)
    mark_output(out, LADDER.name)
    written = []
    for name, df in (("runs", ladder.runs), ("table", ladder.table), ("fits", ladder.fits)):
        written.append(atomic_write_text(out / f"{name}.csv", df.to_csv(index=False)))
    written.append(atomic_write_text(out / "verdict.txt", ladder.text + "\n"))
    fig = loss_vs_params(ladder)
    fig.savefig(out / "loss_vs_params.png", dpi=120)
    plt.close(fig)
    written.append(out / "loss_vs_params.png")
    return written


def paired_differences(df: pd.DataFrame, base: str = BASE) -> pd.DataFrame:
    """arch - base final valid loss for every (arch, size, seed) that base also has."""
    base_loss = df[df.arch == base].set_index(["size", "seed"])["valid_loss"]
    other = df[df.arch != base].join(base_loss.rename("base_loss"), on=["size", "seed"])
    other = other.dropna(subset=["base_loss"])
    return other.assign(diff=other.valid_loss - other.base_loss)


def summarize(df: pd.DataFrame, base: str = BASE) -> pd.DataFrame:
    """The table: one row per (arch, size), the base first, then by size."""
    g = df.groupby(["arch", "size"])
    table = g.agg(
        n_seeds=("seed", "nunique"),
        params_non_embedding=("params_non_embedding", "first"),
        params_total=("params_total", "first"),
        valid_loss_mean=("valid_loss", "mean"),
        valid_loss_sd=("valid_loss", "std"),
    )
    d = paired_differences(df, base).groupby(["arch", "size"])["diff"]
    mean_col, sd_col = f"diff_vs_{base}_mean", f"diff_vs_{base}_sd"
    table = table.join(d.mean().rename(mean_col)).join(d.std().rename(sd_col))
    mean, sd = table[mean_col], table[sd_col]
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
    """Per arch with >= 2 sizes: log(valid_loss) vs log(non-embedding params) over every
    (size, seed) point."""
    out = {}
    for arch, g in df.groupby("arch"):
        if g["size"].nunique() >= 2:
            out[arch] = fit_line(
                np.log(g.params_non_embedding.to_numpy(float)), np.log(g.valid_loss.to_numpy(float))
            )
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


def bootstrap_ratio(df, arch, n_ref, ratio, base=BASE, replicates=REPLICATES, seed=0):
    """The 95% CI of the equal-loss ``ratio`` (the analysis's bias-corrected percentile
    interval), resampling seeds (the same draw for every arch); (nan, nan) with fewer than 2
    seeds both archs ran."""
    seeds = np.array(sorted(set(df[df.arch == base].seed) & set(df[df.arch == arch].seed)))
    if len(seeds) < 2:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    points = {}  # (arch, seed) -> (log N, log loss, sizes), rows in table order
    for (a, s), g in df[df.arch.isin([base, arch])].groupby(["arch", "seed"], sort=False):
        points[a, s] = (
            np.log(g.params_non_embedding.to_numpy(float)),
            np.log(g.valid_loss.to_numpy(float)),
            set(g["size"]),
        )
    ratios = []
    for _ in range(replicates):
        draw = rng.choice(seeds, size=len(seeds))
        fits = [_sample_fit(points, a, draw) for a in (base, arch)]
        ratios.append(equal_loss_ratio(*fits, n_ref) if None not in fits else np.nan)
    return interval(ratio, ratios)


def _sample_fit(points, arch, draw):
    """``fit_line`` over the arch's points of the drawn seeds, in draw order (None: < 2 sizes)."""
    parts = [points[arch, s] for s in draw if (arch, s) in points]
    if len(set().union(*(p[2] for p in parts))) < 2:
        return None
    return fit_line(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))


def fit_table(df: pd.DataFrame, base: str = BASE, replicates: int = REPLICATES, seed: int = 0):
    """fits.csv: one row per arch with >= 2 sizes (see the module's docstring)."""
    fits, n_ref = fit_lines(df), reference_params(df, base)
    rows = []
    for arch, (a, b, r2) in sorted(fits.items()):
        row = {
            "arch": arch,
            "intercept": a,
            "slope": b,
            "r2": r2,
            "n_points": int((df.arch == arch).sum()),
            "n_seeds": df[df.arch == arch].seed.nunique(),
        }
        if arch != base and base in fits:
            ratio = equal_loss_ratio(fits[base], fits[arch], n_ref)
            lo, hi = bootstrap_ratio(df, arch, n_ref, ratio, base, replicates, seed)
            sizes = df[df.arch == arch].params_non_embedding
            note = ratio_note(fits[base][1], b, ratio * n_ref, sizes.min(), sizes.max(), base)
            row.update(
                n_ref=n_ref,
                param_ratio=ratio,
                fewer_params_pct=100 * (1 - ratio),
                ratio_ci_low=lo,
                ratio_ci_high=hi,
                ratio_note=note,
            )
        rows.append(row)
    return pd.DataFrame(rows)


def ratio_note(base_slope, slope, n_needed, n_min, n_max, base=BASE) -> str:
    """Why an equal-loss ratio is not a measurement ("" when it is one)."""
    if base_slope >= 0 or slope >= 0:
        return (
            f"not measurable: the loss does not fall with size (slopes {base} "
            f"{base_slope:+.4f}, arch {slope:+.4f})"
        )
    if not n_min <= n_needed <= n_max:
        n_text = f"{n_needed:,.0f}" if n_needed >= 1 else f"{n_needed:.3g}"
        return (
            f"extrapolated: the arch would need N = {n_text}, outside its ladder "
            f"({n_min:,.0f}..{n_max:,.0f})"
        )
    return ""


# --- checks and verdicts ----------------------------------------------------------------------
def overall_difference(df: pd.DataFrame, arch: str, base: str = BASE) -> tuple[float, float, int]:
    """Per seed, arch - base averaged over sizes; then mean and SD over seeds (and their count)."""
    d = paired_differences(df, base)
    per_seed = d[d.arch == arch].groupby("seed")["diff"].mean()
    return float(per_seed.mean()), float(per_seed.std()), int(per_seed.size)


def verdict(df, table, fits, arch: str, base: str = BASE) -> str:
    """The printed verdict for one arch against the base."""
    rows = table[table.arch == arch]
    col = f"diff_vs_{base}"
    sizes = ", ".join(
        f"{r['size']} {r[col + '_mean']:+.4f} +- {r[col + '_sd']:.4f}" for _, r in rows.iterrows()
    )
    mean, sd, n = overall_difference(df, arch, base)
    lines = [
        f"{arch} - {base}, final valid loss (nats), paired by seed, mean +- SD over seeds:",
        f"  per size: {sizes}",
        f"  all sizes: {mean:+.4f} +- {sd:.4f} ({n} seed{'s' if n != 1 else ''})",
    ]
    fit = fits[fits.arch == arch]
    if not fit.empty and "param_ratio" in fit:
        f = fit.iloc[0].fillna({"ratio_note": ""})
        head = f"  equal-loss parameter ratio at N = {f.n_ref:,.0f}:"
        if f.ratio_note:
            lines.append(f"{head} {f.ratio_note} (the lines give {f.param_ratio:.3g}; {PAPER})")
        else:
            change = f"{abs(f.fewer_params_pct):.1f}% {'fewer' if f.param_ratio <= 1 else 'more'}"
            lines.append(
                f"{head} {f.param_ratio:.3f} ({change} parameters than {base}), 95% "
                f"bootstrap CI over seeds [{f.ratio_ci_low:.3f}, {f.ratio_ci_high:.3f}]; "
                f"{PAPER}"
            )
    lines.append("  verdict: " + verdict_word(arch, base, mean, sd, n))
    return "\n".join(lines)


def ladder_checks(df: pd.DataFrame, table: pd.DataFrame, margin: float = 1.0) -> str:
    """The ladder's sanity checks: far below the unigram baseline, and loss falling with size."""
    gap = df.unigram_loss - df.valid_loss
    if gap.isna().all():
        lines = ["  unigram baseline: not recorded by these runs"]
    else:
        worst = df.loc[gap.idxmin()]
        ok = "PASS" if (gap >= margin).all() else "FAIL"
        lines = [
            f"  {ok}: every run >= {margin:g} nat below the unigram baseline "
            f"({df.unigram_loss.min():.3f} nats); the closest is {worst.arch} {worst['size']} "
            f"seed {worst.seed} at {worst.valid_loss:.4f} ({gap.min():.3f} below)"
        ]
    for arch, rows in table.groupby("arch", sort=False):
        rows = rows.sort_values("params_non_embedding")
        means = rows.valid_loss_mean.to_numpy()
        ok = "PASS" if len(means) > 1 and (np.diff(means) < 0).all() else "FAIL"
        path = " -> ".join(f"{size} {mean:.4f}" for size, mean in zip(rows["size"], means))
        lines.append(f"  {ok}: {arch} mean loss falls with size: {path}")
    return "ladder checks:\n" + "\n".join(lines)


def verdict_word(arch, base, mean, sd, n) -> str:
    if n < 2 or not np.isfinite(sd):
        return f"one seed only: no SD, so no verdict; run more seeds ({arch} {mean:+.4f} nats)"
    if abs(mean) <= 2 * sd:
        return (
            f"the micro gap ({mean:+.4f} nats) is within 2 SD ({2 * sd:.4f}) of seed-to-seed "
            f"variation: no reliable difference between {arch} and {base} at this scale"
        )
    better = "beats" if mean < 0 else "is worse than"
    return f"{arch} {better} {base} at micro scale ({mean:+.4f} +- {sd:.4f} nats, beyond 2 SD)"
