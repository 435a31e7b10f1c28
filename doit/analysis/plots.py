"""The analysis figures, each saved as PNG and SVG:

- ``scaling_data``: per ability, score vs training items per ability on a log4 axis, one line
  per base: observed points, the fitted curve, its 95% band and the chance line;
- ``macro``: the macro average over abilities, the same way;
- ``sensitivity_features``: each sensitivity against Complexity and Transference, labelled;
- ``heatmap``: per ability, the observed score over base x n.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

FIGURES = ("scaling_data", "macro", "sensitivity_features", "heatmap")


def _panels(n: int, size=3.2):
    cols = min(n, 5)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(size * cols, size * 0.85 * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def _curves(fits):
    """Base-keyed (observed x, y, dense n, fitted, lo, hi) for curated data fits."""
    out = {}
    for base, fit in fits:
        n = np.geomspace(fit.x.min(), fit.x.max(), 60)
        pt, reps = fit.curve(n)
        lo, hi = np.percentile(reps, [2.5, 97.5], axis=0) if reps is not None else (pt, pt)
        out[base] = (fit.x, 100 * fit.k / fit.m, n, pt, lo, hi, 100 * fit.chance)
    return out


def scaling_data(a) -> plt.Figure:
    abilities = sorted({k[0] for k in a.grid.data})
    fig, axes = _panels(len(abilities))
    for ax, ability in zip(axes, abilities):
        fits = [(k[1], f) for k, f in a.grid.data.items() if k[0] == ability and k[2] == "curated"]
        for i, (base, (x, y, n, pt, lo, hi, _)) in enumerate(sorted(_curves(fits).items())):
            color = f"C{i}"
            ax.plot(x, y, "o", color=color, ms=3)
            ax.plot(n, pt, "-", color=color, label=base)
            ax.fill_between(n, lo, hi, color=color, alpha=0.2)
        chance = 100 * np.mean([f.chance for _, f in fits])
        ax.axhline(chance, color="grey", ls=":", lw=1, label="chance", gid="chance")
        ax.set_xscale("log", base=4)
        ax.set_title(ability, fontsize=9)
        ax.set_xlabel("items per ability (log4)", fontsize=8)
        ax.set_ylabel("test score", fontsize=8)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def macro(a) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(5, 3.6))
    bases = sorted({k[1] for k in a.grid.data if k[2] == "curated"})
    for i, base in enumerate(bases):
        fits = [f for k, f in a.grid.data.items() if k[1] == base and k[2] == "curated"]
        lo_n, hi_n = max(f.x.min() for f in fits), min(f.x.max() for f in fits)
        n = np.geomspace(lo_n, hi_n, 60)
        pts, reps = zip(*(f.curve(n) for f in fits))
        pt = np.mean(pts, 0)
        band = (
            np.percentile(np.mean(reps, 0), [2.5, 97.5], axis=0)
            if reps[0] is not None
            else (pt, pt)
        )
        xs = sorted(set.intersection(*(set(f.x) for f in fits)))
        ys = [np.mean([100 * f.k[f.x == x].sum() / f.m[f.x == x].sum() for f in fits]) for x in xs]
        ax.plot(xs, ys, "o", color=f"C{i}", ms=3)
        ax.plot(n, pt, "-", color=f"C{i}", label=base)
        ax.fill_between(n, band[0], band[1], color=f"C{i}", alpha=0.2)
    chance = np.mean([f.chance for f in a.grid.data.values()]) * 100
    ax.axhline(chance, color="grey", ls=":", lw=1, label="chance", gid="chance")
    ax.set_xscale("log", base=4)
    ax.set(xlabel="items per ability (log4)", ylabel="macro test score", title="macro average")
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
                    ax.annotate(r["ability"], (r[feature], r[target]), fontsize=7,
                                xytext=(3, 3), textcoords="offset points")  # fmt: skip
            ax.axhline(0, color="grey", lw=0.6)
            ax.set(xlabel=feature, ylabel=target.replace("_", " "))
    fig.tight_layout()
    return fig


def heatmap(a) -> plt.Figure:
    pts = a.counts.points
    grid = pts[(pts["construction"] == "curated") & pts["excluded_ability"].isna()]
    abilities = sorted(grid["ability"].unique())
    fig, axes = _panels(len(abilities))
    for ax, ability in zip(axes, abilities):
        mine = grid[grid["ability"] == ability]
        table = mine.pivot_table(index="base", columns="n_per_ability", values="score")
        order = mine.drop_duplicates("base").sort_values("params")["base"]
        table = table.loc[order]
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
