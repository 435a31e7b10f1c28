"""report.md and a self-contained report.html (figures embedded as base64 PNG), written from
one list of blocks so the two say the same thing."""

from __future__ import annotations

import base64
import html
from pathlib import Path

import numpy as np
import pandas as pd

from doit.analysis import summary
from doit.analysis.fits import CRITERION, MEANINGFUL_IC_GAP
from doit.analysis.formulation import describe as describe_formulation
from doit.analysis.limits import NEED_PREDICT
from doit.analysis.predict import LADDER_HARD_MAE, LADDER_WITHIN
from doit.analysis.sensitivity import AXES, PUBLISHED
from doit.data import abilities as ab
from doit.io import atomic_path

PAPER_TABLE = Path(__file__).with_name("paper_tables.csv")  # the study's published tables


def blocks(a, figures: dict[str, Path], curriculum=(), headline: str | None = None):
    """The report as (kind, content) blocks, in a results section's order: the headline and the
    scaling figures, the groups, the ``curriculum`` blocks, the features, the held-out
    predictions; methods, limits and the full tables last, folded."""
    truth = a.ground_truth is not None
    b = [("h1", "Scaling analysis")]
    if truth:
        b.append(("p", summary.SYNTHETIC))
    b += [
        ("p", headline or summary.headline(a)),
        ("figure", figures.get("scaling_data")),
        (
            "p",
            "Test score against training items per ability (log scale), one line per base: "
            "points observed, the fitted curve with its 95% band, the untuned base hollow "
            "one 4x step left, chance dotted.",
        ),
        ("figure", figures.get("macro")),
        (
            "p",
            f"Macro: the mean of the {len(_in_domain(a))} in-domain abilities' test scores "
            "(the C-Eval OOD sets are not in it), per base.",
        ),
    ]
    b += _group_blocks(a)
    b += list(curriculum)
    b += _feature_blocks(a, figures)
    b += _prediction_blocks(a)
    b.append(("details", ("Methods, limits and the full tables", _detail_blocks(a, figures))))
    return b


def _in_domain(a) -> list[str]:
    return [k for k in ab.ABILITY_KEYS if k in set(a.sensitivity["ability"])]


def _group_blocks(a):
    s = _published(a.sensitivity, a.ground_truth)
    compact = pd.DataFrame({"ability": s["ability"]})
    for axis in AXES:
        v, lo, hi = (s[f"{axis}_sensitivity{x}"] for x in ("", "_lo", "_hi"))
        compact[f"{axis} sensitivity [95% CI]"] = [
            "" if pd.isna(x) else summary.ci(x, y, z) for x, y, z in zip(v, lo, hi)
        ]
        compact[f"{axis} class"] = s[f"{axis}_class"]
        compact[f"MDE {axis}"] = s[f"mde_{axis}"].round(1)
    compact["group"] = s["group"]
    delta = a.settings.delta
    for col in ("planted_group", "published_group"):
        if col in s and (s[col] != "").any():
            compact[col.replace("_", " ")] = s[col]
    return [
        ("h2", "Sensitivity and groups"),
        (
            "p",
            "Data sensitivity: fitted points per 4x training items (averaged over bases); "
            "size sensitivity: fitted points per doubling of non-embedding parameters "
            f"(averaged over n). Each axis is decided on its own, with margin delta = "
            f"{delta:g} points: responsive when its 95% CI's lower bound exceeds delta, "
            f"harmed when its upper bound lies below -{delta:g}, resistant when its 90% CI "
            f"lies inside [-{delta:g}, {delta:g}] (two one-sided tests), otherwise "
            "undetermined, or not decidable with this design when the expected 90% "
            "half-width is at least delta (not even a true zero could be called resistant). "
            "MDE: the smallest true sensitivity the design calls responsive with 80% "
            "probability, delta + (z_0.975 + z_0.8) x its bootstrap SE. Groups: "
            "harmed_by_data (data harmed) and saturating (data responsive, saturation_n's "
            "95% CI inside the grid) from the data axis alone; then responsive_both, "
            "resistant_size (data responsive, size resistant), size_driven (data resistant, "
            "size responsive), resistant_both; any other pair undetermined.",
        ),
        ("table", compact),
    ]


def _detail_blocks(a, figures):
    sens, fits = a.sensitivity, a.fits
    chosen = fits[fits["chosen"].astype(bool)]
    weak = chosen[chosen["ic_gap"] < MEANINGFUL_IC_GAP]
    b = [
        (
            "p",
            describe_formulation(
                a.analysed_rows, a.settings.formulation, a.settings.formulation_split
            ),
        ),
        (
            "p",
            f"Source: `{a.source}`. Checkpoint rule: **{a.settings.rule}** (the epoch with "
            "the best macro in-domain validation score among epochs >= 5, reported on test, unless "
            f"another rule was asked for); {int(a.selected.drop_duplicates('cell')['fallback'].sum())} "
            "cell(s) fell back to their last epoch (fewer than 5 epochs, no validation rows, or "
            "an untuned n = 0 base).",
        ),
        (
            "p",
            f"Uncertainty: {a.counts.method}, {a.counts.replicates} replicates; intervals "
            f"resample {a.counts.resamples}"
            + (
                " (each cell's replicate score moved by a draw of its ability's seed SD; "
                "seeds are not resampled)."
                if "paired" in a.counts.method
                else ". Without per-item rows the cells are not paired, so CIs on differences "
                "between cells are wider than a paired bootstrap's."
            ),
        ),
    ]
    if a.limits:
        b += [("h3", "What this study could not give"), ("list", a.limits)]
    if not a.formulations.empty:
        b += [
            ("h3", "Formulations"),
            (
                "p",
                "Checkpoints scored in several formulations: the mean score of each and of "
                "the per-checkpoint maximum (OLMES's max rule), by base, n, split and ability.",
            ),
            ("table", a.formulations.round(2)),
        ]
    b += [
        ("h3", "Sensitivities, every column"),
        ("table", _published(sens, a.ground_truth)),
        ("h3", "Fits"),
        (
            "p",
            f"Three forms per series (logistic in log n from its floor to a ceiling of 100; "
            f"log-linear; the logistic with a free ceiling, from four points, which falls when "
            f"the ceiling is below the floor), chosen by {CRITERION}; the floor (`floor_source`) "
            f"is the base's untuned (n = 0) score where it has one, resampled, else estimated "
            f"with the kind's chance as its prior. {len(weak)} of {len(chosen)} series chose with a gap "
            f"under {MEANINGFUL_IC_GAP:g}: there the choice means little, and the "
            "replicates choose their own form, so the CIs carry that doubt.",
        ),
        ("table", chosen.drop(columns=["rule", "uncertainty"], errors="ignore").round(3)),
        ("h3", "Base x n"),
        ("figure", figures.get("heatmap")),
    ]
    return b + _paper_blocks(a)


def _published(sens: pd.DataFrame, truth: dict | None = None) -> pd.DataFrame:
    """The groups beside the published study's and, for a micro corpus, the planted ones."""
    df = sens.copy()
    df["published_group"] = df["ability"].map(PUBLISHED).fillna("")
    df["agrees"] = _agrees(df["group"], df["published_group"])
    planted = {k: v.get("planted_group") for k, v in (truth or {}).get("abilities", {}).items()}
    if any(planted.values()):
        df["planted_group"] = df["ability"].map(planted).fillna("")
        df["agrees_planted"] = _agrees(df["group"], df["planted_group"])
    return df.drop(columns=["rule", "delta"], errors="ignore").round(2)


def _agrees(measured: pd.Series, expected: pd.Series) -> np.ndarray:
    return np.where(expected == "", "", np.where(measured == expected, "yes", "no"))


def _prediction_blocks(a):
    s = a.prediction_summary
    if s.empty:
        return [("h2", "Prediction"), ("p", f"Nothing held out: {NEED_PREDICT}.")]
    txt = (
        f"Fit on a subset, predict the rest: the largest base from the smaller ones, and the "
        f"largest n from the smaller ones; 95% prediction intervals. Overall mean absolute "
        f"error {a.predictions['abs_error'].mean():.2f} points, "
        f"{100 * (a.predictions['abs_error'] <= LADDER_WITHIN).mean():.0f}% of held-out cells "
        f"within {LADDER_WITHIN:g} points, interval coverage {100 * a.predictions['covered'].mean():.0f}%. "
        f"For comparison, the model-ladder work on task scaling laws (Bhagia et al., 2024) "
        f"predicted four tasks of 7B/13B models within {LADDER_WITHIN:g} points from small "
        f"models and averaged {LADDER_HARD_MAE} points on harder tasks."
    )
    return [("h2", "Prediction"), ("p", txt), ("table", s.round(3))]


def complexity_where(features, fitted: str) -> str:
    """Which items Complexity was measured on, beside those the sensitivities were."""
    named = features.get("complexity_split")
    splits = sorted(named.dropna().unique()) if named is not None else []
    if not splits:
        return "Complexity's split is not recorded (a `--features` column)."
    return (
        f"Complexity was measured on the {', '.join(splits)} items; the sensitivities it "
        f"explains on the {fitted} items."
    )


def _feature_blocks(a, figures):
    f = a.features
    methods = ", ".join(sorted(f["transference_method"].dropna().unique()))
    notes = (
        "Complexity not measured (run `features --base MODEL --data DOIT_DIR`)."
        if f["complexity"].isna().all()
        else complexity_where(f, a.settings.split)
    )
    out = [
        ("h2", "Complexity and Transference"),
        (
            "p",
            "Complexity = 1 - (acc_rank - chance) / (100 - chance), acc_rank being the untuned "
            "base's format-free ranking accuracy; Transference = the share of an ability's "
            f"full-mix gain over chance reached without its own data ({methods}). {notes}",
        ),
        ("table", f.drop(columns=["rule"], errors="ignore").round(3)),
    ]
    if not a.explain.empty:
        out += [
            ("h3", "Explaining sensitivity"),
            (
                "p",
                "Each sensitivity regressed on the features across abilities (bootstrap CIs; "
                "loao_r2: leave-one-ability-out predictive R^2).",
            ),
            ("table", a.explain.round(3)),
        ]
    else:
        out += [
            (
                "p",
                "Sensitivity not regressed on the features: that needs a feature and a "
                "sensitivity measured for >= 3 abilities (more than the features used).",
            )
        ]
    out += [("figure", figures.get("sensitivity_features"))]
    if a.planted is not None:
        out += [
            ("h3", "Against the micro corpus's planted properties"),
            (
                "p",
                "Spearman correlations of the measured features and sensitivities with the "
                "properties the generator planted (ground_truth.json); planted_data_rank, in "
                "corpora built before the generator's levers, is a hand-typed intended order "
                "of data sensitivity (1 the least, 10 the most), superseded by the levers "
                "(dose, needs_pretrained_facts, learnable: doit/data/micro/README.md). A "
                "sensitivity's correlation has a 95% interval: the Spearman of every bootstrap "
                "replicate's sensitivities (interval_over says what is resampled; Complexity and "
                "Transference have no replicates here).",
            ),
            ("table", a.planted.round(3)),
        ]
    return out


def _paper_blocks(a):
    if not PAPER_TABLE.is_file():
        return []
    paper = pd.read_csv(PAPER_TABLE)
    out = [
        ("h2", "The study's published table"),
        (
            "p",
            "AGIEval and CMMLU of the 7B data-mix settings (Song et al., 2025), beside this "
            "study's scores on the same benchmark splits where it has them.",
        ),
    ]
    wide = paper.pivot_table(
        index=["setting", "benchmark", "shots"], columns="epoch", values="score"
    )
    wide.columns = [f"paper_epoch_{int(c)}" for c in wide.columns]
    ours = a.selected[a.selected["split"].isin(paper["benchmark"].unique())]
    if len(ours):
        label = ours["mix"].fillna(ours["construction"] + " " + ours["n_total"].astype("string"))
        mine = (
            ours.assign(setting=label, benchmark=ours["split"])
            .groupby(["setting", "benchmark"])["score"]
            .mean()
        )
        wide = wide.reset_index().merge(
            mine.rename("reproduced").reset_index(), on=["setting", "benchmark"], how="outer"
        )
    else:
        out.append(
            ("p", "No benchmark split (agieval, cmmlu) in these results: nothing reproduced.")
        )
        wide = wide.reset_index()
    return out + [("table", wide.round(2))]


def write(a, out: Path, figures: dict[str, Path], extra=(), headline=None) -> tuple[Path, Path]:
    """report.md and report.html; ``extra``: the curriculum's blocks (after the groups),
    ``headline``: the opening paragraph (default `summary.headline`)."""
    return write_blocks(blocks(a, figures, extra, headline), out)


def write_blocks(bl, out: Path) -> tuple[Path, Path]:
    """report.md and the self-contained report.html of ``bl`` ((kind, content) blocks), each
    written to a temporary file and renamed: a failure never leaves half a report."""
    md, page = out / "report.md", out / "report.html"
    with atomic_path(md) as tmp:
        tmp.write_text(to_markdown(bl, out), encoding="utf-8")
    with atomic_path(page) as tmp:
        tmp.write_text(to_html(bl), encoding="utf-8")
    return md, page


def to_markdown(bl, out: Path) -> str:
    parts = []
    for kind, x in bl:
        if kind in ("h1", "h2", "h3"):
            parts.append("#" * int(kind[1]) + " " + x)
        elif kind == "p":
            parts.append(x)
        elif kind == "list":
            parts.append("\n".join(f"- {line}" for line in x))
        elif kind == "table":
            parts.append(_md_table(x))
        elif kind == "figure" and x is not None:
            parts.append(f"![{x.stem}]({x.relative_to(out)})")
        elif kind == "details":
            title, inner = x
            parts.append(
                f"<details><summary>{title}</summary>\n\n"
                f"{to_markdown(inner, out).rstrip()}\n\n</details>"
            )
    return "\n\n".join(parts) + "\n"


def _md_table(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    cell = _cell
    rows = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    rows += ["| " + " | ".join(cell(v) for v in r) + " |" for r in df.itertuples(index=False)]
    return "\n".join(rows)


def _cell(v) -> str:
    if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)):
        return ""
    return str(v)


def to_html(bl) -> str:
    style = (
        "body{font-family:sans-serif;max-width:1100px;margin:2em auto;line-height:1.45}"
        ".scroll{overflow-x:auto;max-width:100%}"
        "table.t{border-collapse:collapse;font-size:12px;margin:1em 0;white-space:nowrap}"
        "table.t td,table.t th{border:1px solid #ccc;padding:2px 6px}img{max-width:100%}"
        "details{margin:1.5em 0}summary{font-weight:bold;cursor:pointer}"
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>doit scaling analysis"
        f"</title><style>{style}</style></head><body>{_html_body(bl)}</body></html>\n"
    )


def _html_body(bl) -> str:
    body = []
    for kind, x in bl:
        if kind in ("h1", "h2", "h3"):
            body.append(f"<{kind}>{html.escape(x)}</{kind}>")
        elif kind == "p":
            body.append(f"<p>{html.escape(x).replace('**', '')}</p>")
        elif kind == "list":
            body.append("<ul>" + "".join(f"<li>{html.escape(v)}</li>" for v in x) + "</ul>")
        elif kind == "table":
            table = x.to_html(index=False, na_rep="", border=0, classes="t")
            body.append(f'<div class="scroll">{table}</div>')
        elif kind == "figure" and x is not None:
            data = base64.b64encode(Path(x).read_bytes()).decode("ascii")
            body.append(f'<figure><img alt="{x.stem}" src="data:image/png;base64,{data}"></figure>')
        elif kind == "details":
            title, inner = x
            body.append(
                f"<details><summary>{html.escape(title)}</summary>{_html_body(inner)}</details>"
            )
    return "".join(body)
