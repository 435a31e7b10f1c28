"""What ``doit analysis curriculum`` writes (columns and keys in README.md):

- ``mixes/<policy>-<budget>.yaml``: each allocation in the mix schema (`doit.data.mixes`),
  explicit counts (an ability given 0 items is excluded), provenance: study, rule, split,
  policy, budget, unit, target, model, the fits' hash, the predicted macro gain over uniform;
  ``doit sft --mix`` and a grid's ``data.mix`` train on it as it is;
- ``curriculum.csv`` (`core.predictions`), ``transfer.csv`` (T_a per ability), and with the
  regression policy ``regression.csv`` (its cross-validation);
- ``figures/curriculum.{png,svg}``: per ability the fitted curve of the target with the
  observed scores and each policy's count at its predicted score, and the allocations;
- ``curriculum.md`` / ``curriculum.html``: the report section (``blocks``; the analysis
  report's ``run --budget`` carries the same section).

Everything is computed before the first file is written; each file is written atomically.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from doit.analysis import report
from doit.analysis.bootstrap import intervals
from doit.analysis.curriculum.core import MACRO, MACRO_VIEW, Result
from doit.analysis.curriculum.model import replicate_curve
from doit.analysis.fits import same_n_rows
from doit.analysis.plots import _panels, plt
from doit.io import OutputKind, atomic_path, atomic_write_text, mark_output, marked_or_holding

# A curriculum folder: its manifest.json (or, written before it had one, what `write` always writes)
CURRICULUM = OutputKind(
    "curriculum",
    holds=marked_or_holding("curriculum", "curriculum.csv", "transfer.csv", "curriculum.html"),
)


def mix_name(policy: str, budget: int) -> str:
    return f"{policy}-{budget}"


def mix_text(result: Result, policy: str) -> str:
    """One allocation as a mix file, every key commented."""
    alloc, o, ev = result.allocations[policy], result.options, result.evidence
    macro = result.table[(result.table["policy"] == policy) & (result.table["ability"] == MACRO)]
    m = macro.iloc[0]
    provenance = {
        "doit": "analysis curriculum",
        "study": str(ev.analysis.source),
        "rule": o.settings.rule,
        "split": o.settings.split,
        "policy": policy,
        "budget": o.budget,
        "unit": o.unit,
        "target": ev.target,
        "model": alloc.model.label,
        "fits_sha256": ev.fits_sha,
        "predicted_macro": round(float(m["predicted"]), 2),
        "predicted_gain_vs_uniform": [
            round(float(m[c]), 2) for c in ("gain", "gain_lo", "gain_hi")
        ],
    }
    body = {
        "seed": 0,
        "source": o.pool,
        "counts": {k: n for k, n in alloc.counts.items() if n > 0},
        "exclude": [k for k, n in alloc.counts.items() if n == 0],
        "provenance": provenance,
    }
    keys = "counts: items per ability;\n# exclude: abilities given none"
    if alloc.stages:  # trained in order; the second replays some of the first's items
        stages = [{"counts": dict(one)} for one in alloc.stages]
        stages[-1]["replay"] = alloc.replay
        body = {"seed": 0, "source": o.pool, "stages": stages, "provenance": provenance}
        keys = "stages: trained in order, each its counts\n# (items per ability), the last with "
        keys += "replay: items of the earlier stages drawn again"
    head = (
        f"# {policy} at a budget of {o.budget} {o.unit} (doit analysis curriculum; "
        f"doit/analysis/README.md).\n"
        f'# seed: sampling seed; source: the train pool ("1000" | full); {keys}; '
        "provenance: how it was chosen.\n"
        f"#   doit sft --config RECIPE.yaml --mix THIS_FILE --doit_dir DOIT_DIR\n"
    )
    return head + yaml.safe_dump(body, sort_keys=False, allow_unicode=True)


def transfer_table(result: Result) -> pd.DataFrame:
    rows = []
    for k, t in result.evidence.model.transfer.items():
        lo, hi = t.ci
        rows.append(
            {
                "ability": k,
                "transfer_share": t.share,
                "transfer_share_lo": lo,
                "transfer_share_hi": hi,
                "pairs": t.pairs,
                "note": t.note,
            }
        )
    return pd.DataFrame(rows)


def regression_table(result: Result) -> pd.DataFrame | None:
    alloc = result.allocations.get("regression")
    return None if alloc is None else alloc.model.cv


def figure(result: Result) -> plt.Figure:
    """Per ability: the target's fitted curve (95% band), observed scores, chance, and each
    policy's count at its predicted score (95% CI); last panel: the allocations."""
    ev, table = result.evidence, result.table
    fig, axes = _panels(len(ev.abilities) + 1)
    pts = ev.analysis.counts.points
    observed = pts[same_n_rows(pts) & (pts["base"] == ev.target).to_numpy()]
    policies = list(result.allocations)
    top = max(ev.model.grid_max, max(max(a.counts.values()) for a in result.allocations.values()))
    n = np.geomspace(1, top, 80)
    for ax, k in zip(axes, ev.abilities):
        fit = ev.model.curves[k]
        pt, reps = fit.curve(n)
        ax.plot(n, pt, "-", color="grey", lw=1, label="fitted (uniform grid)")
        band = replicate_curve(fit, n)
        if band is not None:
            ax.fill_between(n, *intervals(pt, band), color="grey", alpha=0.15)
        mine = observed[observed["ability"] == k]
        ax.plot(
            mine["n_per_ability"].astype(float),
            mine["score"],
            "o",
            color="black",
            ms=3,
            label=f"observed ({ev.options.settings.split})",
        )
        ax.axhline(100 * fit.chance, color="grey", ls=":", lw=1)
        for i, p in enumerate(policies):
            r = table[(table["policy"] == p) & (table["ability"] == k)].iloc[0]
            err = [[r["predicted"] - r["predicted_lo"]], [r["predicted_hi"] - r["predicted"]]]
            ax.errorbar(
                [max(r["n"], 1)],
                [r["predicted"]],
                yerr=np.nan_to_num(np.abs(err)),
                fmt="s" if r["extrapolated"] else "D",
                color=f"C{i}",
                ms=4,
                lw=0.8,
                label=p,
            )
        ax.set_xscale("log", base=4)
        ax.set_title(k, fontsize=9)
        ax.set_xlabel("items (log4)", fontsize=7)
        ax.tick_params(labelsize=7)
    axes[0].legend(fontsize=6)
    bar = axes[len(ev.abilities)]
    width = 0.8 / len(policies)
    for i, p in enumerate(policies):
        counts = [result.allocations[p].counts[k] for k in ev.abilities]
        bar.bar(np.arange(len(ev.abilities)) + i * width, counts, width, color=f"C{i}", label=p)
    bar.set_xticks(
        np.arange(len(ev.abilities)) + 0.4 - width / 2, ev.abilities, rotation=70, fontsize=6
    )
    bar.set_title(f"items per ability (budget {ev.options.budget} {ev.options.unit})", fontsize=8)
    bar.legend(fontsize=6)
    fig.subplots_adjust(left=0.05, right=0.99, bottom=0.12, top=0.95, wspace=0.3, hspace=0.55)
    return fig


def blocks(result: Result, figure_path: Path | None = None) -> list[tuple[str, object]]:
    """The report section: setup, macro predictions, allocations, transfer, notes, figure."""
    ev, o, t = result.evidence, result.options, result.table
    macro = t[t["ability"] == MACRO][MACRO_VIEW]
    wide = t[t["ability"] != MACRO].pivot(index="ability", columns="policy", values="n")
    wide = wide.loc[list(ev.abilities), list(result.allocations)].reset_index()
    out = [
        ("h2", f"Curriculum: {o.budget} {o.unit} for {ev.target}"),
        (
            "p",
            f"Fitted on the {o.settings.split} split (checkpoint rule {o.settings.rule}), so "
            f"test stays for the comparison. Each ability scores S_a = c_a + (1 - T_a)(U_a(n_a) - c_a) + "
            f"T_a (U_a(N_other / (K - 1)) - c_a): U_a the fitted uniform-grid curve, T_a the "
            "share of its uniform gain kept without its own data (leave-one-out cells). "
            f"Predictions and gains over uniform carry 95% CIs from the analysis's "
            f"{ev.analysis.counts.method} ({ev.analysis.counts.replicates} replicates), "
            "before anything is trained. Counts outside the fitted grid are extrapolated. "
            f"The macro rows are the weighted mean of the {len(ev.abilities)} in-domain "
            "abilities' predicted valid scores.",
        ),
        ("table", macro.round(2)),
        ("h3", "Items per ability"),
        ("table", wide),
        ("h3", "Transfer shares (T_a)"),
        ("table", transfer_table(result).round(3)),
    ]
    reg = regression_table(result)
    if reg is not None:
        out += [("h3", "Regression: cross-validation"), ("table", reg.round(3))]
    if result.notes:
        out += [("h3", "Notes"), ("list", result.notes)]
    if figure_path is not None:
        out.append(("figure", figure_path))
    return out


def write(result: Result, out: Path) -> list[Path]:
    """Every output into ``out`` (module docstring); returns the paths written."""
    out = Path(out)
    mark_output(out, CURRICULUM.name)
    o = result.options
    texts = {
        out / "mixes" / f"{mix_name(p, o.budget)}.yaml": mix_text(result, p)
        for p in result.allocations
    }
    said = {"resamples": result.evidence.analysis.counts.resamples}  # what the intervals do
    tables = {
        out / "curriculum.csv": result.table,
        out / "transfer.csv": transfer_table(result).assign(**said),
    }
    if regression_table(result) is not None:
        tables[out / "regression.csv"] = regression_table(result)
    written = []
    for path, text in texts.items():
        written.append(atomic_write_text(path, text))
    for path, df in tables.items():
        with atomic_path(path) as tmp:
            df.to_csv(tmp, index=False)
        written.append(path)
    written.append(save_figure(result, out))
    return written + write_report(result, out)


def save_figure(result: Result, out: Path) -> Path:
    """``out/figures/curriculum.png`` (and .svg); returns the PNG's path."""
    fig = figure(result)
    png = Path(out) / "figures" / "curriculum.png"
    for ext in ("png", "svg"):
        with atomic_path(png.with_suffix(f".{ext}")) as tmp:
            fig.savefig(tmp, dpi=110)
    plt.close(fig)
    return png


def write_report(result: Result, out: Path, extra=()) -> list[Path]:
    """curriculum.md and curriculum.html (``extra``: the validation's blocks)."""
    section = blocks(result, out / "figures" / "curriculum.png") + list(extra)
    return [
        atomic_write_text(out / "curriculum.md", report.to_markdown(section, out)),
        atomic_write_text(out / "curriculum.html", report.to_html(section)),
    ]
