"""The analysis figures, each saved as PNG and SVG:

- ``scaling_data``: per ability, score vs training items per ability on a log4 axis, one line
  per base: observed points (the untuned n = 0 cell hollow, one 4x step left of the smallest n:
  it is not fitted), the fitted curve and its 95% band where a fit exists, the chance line;
- ``macro``: the macro average over the in-domain abilities (not the OOD sets), the same way;
- ``sensitivity_features``: each sensitivity against Complexity and Transference, labelled;
- ``heatmap``: per ability, the observed score over base x n;
- ``loss_vs_params`` (a pretraining ladder, ``doit.analysis.ladder``): final validation loss
  against non-embedding parameters per arch with its log-log fit, and each arch's seed-paired
  difference from the base arch.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402

from doit.analysis.bootstrap import intervals  # noqa: E402
from doit.analysis.fits import same_n_rows  # noqa: E402
from doit.data import abilities as ab  # noqa: E402
from doit.data.macro import macro_by  # noqa: E402

FIGURES = ("scaling_data", "macro", "sensitivity_features", "heatmap")


def _panels(n: int, size=3.2):
    n = max(n, 1)  # an empty study still gets one panel, saying so
    cols = min(n, 5)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(size * cols, size * 0.85 * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def _say(ax, text: str):
    ax.text(
        0.5,
        0.5,
        text,
        ha="center",
        va="center",
        fontsize=7,
        wrap=True,
        transform=ax.transAxes,
        color="dimgrey",
    )


def _observed(a):
    """Observed test scores of the uniform grid and the untuned (n = 0) base cells, with ``n``
    (0 for base cells), bases ordered by params."""
    pts = a.counts.points
    keep = same_n_rows(pts) | (pts["construction"] == "base").to_numpy(dtype=bool)
    obs = pts[keep].copy()
    obs["n"] = obs["n_per_ability"].astype("Float64").fillna(0).astype(float)
    order = obs.drop_duplicates("base").sort_values("params")["base"].tolist()
    return obs, order


def _anchor(obs) -> float:
    """Where n = 0 is drawn on a log4 axis: one 4x step left of the smallest n > 0."""
    positive = obs.loc[obs["n"] > 0, "n"]
    return float(positive.min()) / 4 if len(positive) else 1.0


def _curves(counts, fits):
    """Base-keyed (observed x, y, dense n, fitted, lo, hi) for curated data fits (``fits``:
    (base, fit) pairs of ``counts``' points)."""
    out = {}
    for base, fit in fits:
        n = np.geomspace(fit.x.min(), fit.x.max(), 60)
        pt, reps = fit.curve(n)
        lo, hi = intervals(pt, reps) if reps is not None else (pt, pt)
        observed = counts.scores(fit.columns).point
        out[base] = (fit.x, observed, n, pt, lo, hi, 100 * fit.chance)
    return out


def _data_axis(ax, obs, x0, ylabel):
    lo, hi = ax.get_ylim()
    if hi - lo < 5:  # a series flat at 0 or 100: show it on the whole scale, not a sliver
        ax.set_ylim(-3, 103)
    ax.set_xscale("log", base=4)
    if (obs["n"] == 0).any():
        ticks = [x0, *sorted(obs.loc[obs["n"] > 0, "n"].unique())]
        ax.set_xticks(ticks, ["0", *(f"{int(t)}" for t in ticks[1:])], fontsize=7)
        ax.minorticks_off()
    ax.set_xlabel("items per ability (log4; 0 = untuned base)", fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)


def _ability_panels(a):
    """(observed, bases in order, abilities, figure, one axis per ability); the figure says
    so when there is nothing to draw (abilities empty)."""
    obs, order = _observed(a)
    abilities = sorted(obs["ability"].unique())
    fig, axes = _panels(len(abilities))
    if not abilities:
        _say(axes[0], "no uniform or untuned-base test scores to draw")
    return obs, order, abilities, fig, axes


def scaling_data(a) -> plt.Figure:
    """Observed points per base (n = 0 hollow, at the left), fitted curves where a fit exists."""
    obs, order, abilities, fig, axes = _ability_panels(a)
    if not abilities:
        return fig
    x0 = _anchor(obs)
    for ax, ability in zip(axes, abilities):
        mine = obs[obs["ability"] == ability]
        fits = dict(
            (k[1], f) for k, f in a.curves.data.items() if k[0] == ability and k[2] == "curated"
        )
        curves = _curves(a.counts, fits.items())
        for i, base in enumerate(order):
            color, pts = f"C{i}", mine[mine["base"] == base]
            if pts.empty:
                continue
            tuned, untuned = pts[pts["n"] > 0], pts[pts["n"] == 0]
            ax.plot(tuned["n"], tuned["score"], "o", color=color, ms=3, label=base)
            ax.plot([x0] * len(untuned), untuned["score"], "o", mfc="none", color=color, ms=4)
            if base in curves:
                _, _, n, pt, lo, hi, _ = curves[base]
                ax.plot(n, pt, "-", color=color)
                ax.fill_between(n, lo, hi, color=color, alpha=0.2)
        if not curves:
            ax.text(
                0.02,
                0.98,
                "no fit: < 2 n per base",
                fontsize=6,
                va="top",
                transform=ax.transAxes,
                color="dimgrey",
            )
        chance = float(mine["chance"].mean())
        ax.axhline(chance, color="grey", ls=":", lw=1, label="chance", gid="chance")
        _data_axis(ax, obs, x0, "test score")
        ax.set_title(ability, fontsize=9)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def macro(a) -> plt.Figure:
    """Macro average over abilities per base: observed means at each n (n = 0 hollow), the
    base-averaged fitted curve where every ability of that base has a fit."""
    fig, ax = plt.subplots(figsize=(5, 3.6))
    obs, order = _observed(a)
    obs = obs[obs["ability"].isin(ab.ABILITY_KEYS)]  # the in-domain macro: OOD sets left out
    if obs.empty:
        _say(ax, "no uniform or untuned-base test scores to draw")
        return fig
    x0, n_abilities = _anchor(obs), obs["ability"].nunique()
    for i, base in enumerate(order):
        mine = obs[obs["base"] == base]
        means = macro_by(mine, ["n"], expected=obs["ability"]).set_index("n")["score"].dropna()
        tuned = means[means.index > 0]
        ax.plot(tuned.index, tuned.to_numpy(), "o", color=f"C{i}", ms=3, label=base)
        if 0 in means.index:
            ax.plot([x0], [means.loc[0]], "o", mfc="none", color=f"C{i}", ms=5)
        fits = [f for k, f in a.curves.data.items() if k[1] == base and k[2] == "curated"]
        if len(fits) < n_abilities or not fits:
            continue
        lo_n, hi_n = max(f.x.min() for f in fits), min(f.x.max() for f in fits)
        if hi_n <= lo_n:
            continue
        n = np.geomspace(lo_n, hi_n, 60)
        pts, reps = zip(*(f.curve(n) for f in fits))
        pt = np.mean(pts, 0)
        band = intervals(pt, np.mean(reps, 0)) if reps[0] is not None else (pt, pt)
        ax.plot(n, pt, "-", color=f"C{i}")
        ax.fill_between(n, band[0], band[1], color=f"C{i}", alpha=0.2)
    if not a.curves.data:
        _say(ax, "no data fits (< 2 n per base): observed means only")
    chance = float(obs.groupby("ability")["chance"].mean().mean())
    ax.axhline(chance, color="grey", ls=":", lw=1, label="chance", gid="chance")
    _data_axis(ax, obs, x0, "macro test score")
    ax.set_title(f"macro average of {n_abilities} in-domain abilities", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def sensitivity_features(a) -> plt.Figure:
    df = a.sensitivity.merge(a.features, on="ability", how="left")
    fig, axes = plt.subplots(2, 2, figsize=(8, 6.4))
    for row, target in enumerate(("data_sensitivity", "size_sensitivity")):
        for col, feature in enumerate(("complexity", "transference")):
            ax = axes[row, col]
            d = df[["ability", feature, target, f"{target}_lo", f"{target}_hi"]].dropna(
                subset=[feature, target]
            )
            if d.empty:
                ax.text(0.5, 0.5, f"{feature} not measured", ha="center", transform=ax.transAxes)
            else:
                err = [d[target] - d[f"{target}_lo"], d[f"{target}_hi"] - d[target]]
                ax.errorbar(d[feature], d[target], yerr=np.abs(err), fmt="o", ms=4, lw=0.8)
                for _, r in d.iterrows():
                    ax.annotate(
                        r["ability"],
                        (r[feature], r[target]),
                        fontsize=7,
                        xytext=(3, 3),
                        textcoords="offset points",
                    )
            ax.axhline(0, color="grey", lw=0.6)
            ax.set(xlabel=feature, ylabel=target.replace("_", " "))
    fig.tight_layout()
    return fig


def heatmap(a) -> plt.Figure:
    """Per ability, the observed score over base x n (n = 0: the untuned base)."""
    obs, order, abilities, fig, axes = _ability_panels(a)
    if not abilities:
        return fig
    for ax, ability in zip(axes, abilities):
        mine = obs[obs["ability"] == ability]
        table = mine.pivot_table(index="base", columns="n", values="score")
        table = table.loc[[b for b in order if b in table.index]]
        im = ax.imshow(table.to_numpy(float), aspect="auto", cmap="viridis", origin="lower")
        ax.set_xticks(range(table.shape[1]), [str(int(c)) for c in table.columns], fontsize=7)
        ax.set_yticks(range(table.shape[0]), list(table.index), fontsize=7)
        ax.set_title(ability, fontsize=9)
        ax.set_xlabel("n per ability", fontsize=8)
        fig.colorbar(im, ax=ax, fraction=0.046)
    fig.tight_layout()
    return fig


def save_all(a, out: Path) -> dict[str, Path]:
    """Every figure as ``out/figures/NAME.png`` and ``.svg``; returns name -> PNG path."""
    folder = Path(out) / "figures"
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name in FIGURES:
        fig = globals()[name](a)
        for ext in ("png", "svg"):
            fig.savefig(folder / f"{name}.{ext}", dpi=110)
        plt.close(fig)
        paths[name] = folder / f"{name}.png"
    return paths


def loss_vs_params(ladder) -> plt.Figure:
    """Left: mean +- SD over seeds of the final valid loss per (arch, size) and each arch's
    fitted line (log-log); right: arch - base, paired by seed, mean +- SD."""
    table, fits, base = ladder.table, ladder.fits, ladder.base
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for i, (arch, rows) in enumerate(table.groupby("arch")):
        color = f"C{i}"
        left.errorbar(
            rows.params_non_embedding,
            rows.valid_loss_mean,
            yerr=rows.valid_loss_sd,
            fmt="o",
            color=color,
            capsize=3,
            label=arch,
        )
        fit = fits[fits.arch == arch]
        if not fit.empty:
            n = np.geomspace(rows.params_non_embedding.min(), rows.params_non_embedding.max(), 50)
            a, b = fit.iloc[0].intercept, fit.iloc[0].slope
            left.plot(
                n, np.exp(a + b * np.log(n)), color=color, lw=1, label=f"{arch} fit, slope {b:.3f}"
            )
        if arch != base:
            right.errorbar(
                rows.params_non_embedding,
                rows[f"diff_vs_{base}_mean"],
                yerr=rows[f"diff_vs_{base}_sd"],
                fmt="o-",
                color=color,
                capsize=3,
                label=f"{arch} - {base}",
            )
    left.set(
        xscale="log",
        yscale="log",
        xlabel="non-embedding parameters",
        ylabel="final validation loss (nats)",
        title="loss vs size (mean +- SD over seeds)",
    )
    right.axhline(0, color="grey", lw=0.8)
    right.set(
        xscale="log",
        xlabel="non-embedding parameters (of the arch)",
        ylabel=f"loss difference vs {base} (nats)",
        title="paired by seed: mean +- SD",
    )
    plain = matplotlib.ticker.FormatStrFormatter("%.2f")
    left.yaxis.set_major_formatter(plain)
    left.yaxis.set_minor_formatter(plain)
    left.legend(fontsize=7)
    right.legend(fontsize=7)
    fig.tight_layout()
    return fig
