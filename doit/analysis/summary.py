"""What a study found, in a few sentences: the report's headline paragraph and the short
summary `recipes/demo.py` prints. Every number comes from an `Analysis` (and, for the
curriculum, from the ``differences`` table of `doit.analysis.curriculum.validate`)."""

from __future__ import annotations

import pandas as pd

from doit.analysis.bootstrap import ITEMS, SEEDS
from doit.analysis.sensitivity import AXES, CLASSES
from doit.data import abilities as ab

SYNTHETIC = (
    "The data are the synthetic micro DoIT corpus (`doit data micro`): a generated world "
    "whose abilities were planted with known properties (ground_truth.json), not the "
    "DoIT dataset. Its numbers say whether the toolkit recovers what was planted, "
    "nothing about Chinese LLMs."
)


def ci(v: float, lo: float, hi: float, sign: bool = True) -> str:
    """``5.3 [4.9, 5.7]`` (signed by default: sensitivities and differences)."""
    f = "{:+.1f}" if sign else "{:.1f}"
    return f"{f.format(v)} [{f.format(lo)}, {f.format(hi)}]"


def by_data_sensitivity(a) -> pd.DataFrame:
    """The in-domain abilities with a data sensitivity, the fastest-growing first."""
    s = a.sensitivity
    s = s[s["ability"].isin(ab.ABILITY_KEYS) & s["data_sensitivity"].notna()]
    return s.sort_values("data_sensitivity", ascending=False, ignore_index=True)


def _named(rows: pd.DataFrame) -> str:
    return "; ".join(
        f"{r.ability} {ci(r.data_sensitivity, r.data_sensitivity_lo, r.data_sensitivity_hi)}"
        for r in rows.itertuples()
    )


def group_agreement(a) -> tuple[int, int, int] | None:
    """(as planted, abilities with a planted group, of them undetermined) or None without a
    ground truth."""
    truth = (a.ground_truth or {}).get("abilities", {})
    planted = {k: v.get("planted_group") for k, v in truth.items() if v.get("planted_group")}
    if not planted:
        return None
    s = a.sensitivity.set_index("ability")["group"]
    have = [k for k in planted if k in s.index]
    agree = sum(s[k] == planted[k] for k in have)
    return agree, len(have), sum(s[k] == "undetermined" for k in have)


def by_class(a, axis: str) -> dict[str, list[str]]:
    """The abilities of each ``axis`` class ("data" or "size"), in `sensitivity.CLASSES`'
    order; a class no ability has is left out."""
    s = a.sensitivity
    found = {c: list(s.loc[s[f"{axis}_class"] == c, "ability"]) for c in CLASSES}
    return {c: names for c, names in found.items() if names}


def decisions(a, axis: str) -> str:
    """``responsive: biology, ethics; harmed: code``: every ability's class on ``axis``."""
    return "; ".join(f"{c}: {', '.join(names)}" for c, names in by_class(a, axis).items())


def rank_agreement(a) -> str | None:
    """``Spearman 0.42 [0.10, 0.71] (10 abilities; 95% CI over ...)``: the data sensitivities'
    agreement with planted_data_rank and its interval (`features.planted_correlations`), or
    None without one."""
    p = a.planted
    if p is None or p.empty:
        return None
    row = p[(p["measured"] == "data_sensitivity") & (p["planted"] == "planted_data_rank")]
    if row.empty or pd.isna(row["spearman"].iloc[0]):
        return None
    r = row.iloc[0]
    if pd.isna(r["spearman_lo"]):
        return f"Spearman {r['spearman']:.2f} ({int(r['abilities'])} abilities; no interval)"
    return (
        f"Spearman {r['spearman']:.2f} [{r['spearman_lo']:.2f}, {r['spearman_hi']:.2f}] "
        f"({int(r['abilities'])} abilities; 95% CI over {r['interval_over']})"
    )


def curriculum_gain(differences: pd.DataFrame | None, policy: str = "marginal"):
    """The test macro row of ``policy`` minus the baseline (a namedtuple-like row) or None."""
    if differences is None or differences.empty:
        return None
    d = differences
    row = d[(d["policy"] == policy) & (d["split"] == "test") & (d["ability"] == "macro")]
    return None if row.empty else row.iloc[0]


def resampled(counts) -> str:
    """A sentence on what the intervals resample (``Counts.resamples``), for the headline."""
    what = counts.resamples
    if what == ITEMS:
        return (
            "Intervals cover item sampling only: no grid point has two training seeds and no "
            "--seed-sd prior was given, so seed-to-seed variation is not in them."
        )
    if what == SEEDS:
        return (
            "Intervals resample items and training seeds (a seed SD per ability, estimated "
            "from the grid points with two or more seeds; sensitivity.csv's seed_sd)."
        )
    return f"Intervals resample {what}."


def _gain_text(gain, budget: int | None, base: str | None, seeds: int) -> str:
    from doit.analysis.curriculum.policies import baseline  # the curriculum imports the report

    over = "items only, one training seed" if seeds < 2 else f"items and {seeds} seeds"
    if "resamples" in gain and isinstance(gain["resamples"], str):
        over = gain["resamples"]
    at = f" at {budget} items" if budget else ""
    on = f" on {base}" if base else ""
    return (
        f"the {gain['policy']} curriculum{at}{on} minus {baseline().name}, test macro over the "
        f"{len(ab.ABILITY_KEYS)} in-domain abilities: {ci(gain['diff'], gain['diff_lo'], gain['diff_hi'])} "
        f"points (paired CI over {over})"
    )


def headline(a, gain=None, budget=None, base=None, seeds: int = 1) -> str:
    """The report's opening paragraph: what grew fastest and slowest, how the groups and the
    ranking compare with the planted world, and the curriculum's measured gain."""
    ranked = by_data_sensitivity(a)
    parts = []
    if len(ranked):
        parts.append(
            f"Fastest-growing with data (points per 4x items, 95% CI): "
            f"{_named(ranked.head(2))}; slowest: {_named(ranked.tail(2).iloc[::-1])}."
        )
    groups = group_agreement(a)
    if groups:
        agree, total, undetermined = groups
        parts.append(
            f"{agree} of {total} abilities fall in their planted group "
            f"({undetermined} undetermined: their two classes name no group; the MDE "
            "columns say how large an effect the design calls responsive)."
        )
    if len(a.sensitivity):
        delta = a.settings.delta
        parts.append(
            f"Each ability's class per axis (margin delta = {delta:g} points; resistant: the "
            f"90% CI inside [-{delta:g}, {delta:g}]). "
            + " ".join(f"{axis.capitalize()} axis: {decisions(a, axis)}." for axis in AXES)
        )
    rank = rank_agreement(a)
    if rank:
        parts.append(
            f"The measured data sensitivities rank the abilities as the generator "
            f"planted them at {rank}."
        )
    if gain is not None:
        text = _gain_text(gain, budget, base, seeds)
        parts.append(text[0].upper() + text[1:] + ".")
    if not parts:
        parts.append("No data sensitivity could be measured (see the limits below).")
    return " ".join([*parts, resampled(a.counts)])


def reference_lines(a, reference, formulation: str) -> list[str]:
    """Two lines grading a study (the demo) against the recorded reference study
    (``reference``: `doit.analysis.reference.read_reference`'s pair; None: one line saying it
    is not recorded): its data classes against the reference's, its sensitivities against
    the reference's fits over its own bases and n, and the dose lever it recovered."""
    from doit.analysis import reference as ref

    if reference is None:
        return [f"reference study: not recorded ({ref.REFERENCE_DIR}/run.sh records it)"]
    in_domain = a.sensitivity["ability"].isin(ab.ABILITY_KEYS)
    graded = ref.against_reference(a, *reference)
    decided, agree = graded["decided"], graded["agree"]
    fits = ", ".join(f"{ax} {len(graded['fits'][ax])} of {graded['of'][ax]}" for ax in AXES)
    lines = [
        f"against the reference ({ref.REFERENCE_DIR}): data classes decided "
        f"{len(decided)} of {int(in_domain.sum())}, {len(agree)} as the reference's; "
        f"sensitivities within 1.96 SE of its fits over these bases: {fits}"
    ]
    if a.ground_truth and "dose" in next(iter(a.ground_truth["abilities"].values()), {}):
        d = ref.dose_recovery(a.curves, ref.truth_of(a.ground_truth, formulation))
        lines.append(
            f"dose lever: Spearman of half-rise n with the planted dose "
            f"{d['spearman']:.2f} [{d['spearman_lo']:.2f}, {d['spearman_hi']:.2f}] over "
            f"{len(d['abilities'])} learnable abilities"
        )
    return lines


def summary_lines(
    a,
    gain,
    seconds: float,
    report,
    budget=None,
    base=None,
    seeds: int = 1,
    cells: int | None = None,
    curriculum: str = "",
    graded: list[str] = (),
) -> list[str]:
    """At most ten lines for a terminal (`recipes/demo.py`); ``curriculum``: how its
    curriculum was made, said after its gain; ``graded``: `reference_lines`, after the
    classes."""
    ranked = by_data_sensitivity(a)
    done = f"{cells} cells, " if cells is not None else ""
    lines = [
        f"study: synthetic micro DoIT (not DoIT); {done}{seconds / 60:.1f} min; "
        f"intervals resample {a.counts.resamples}"
    ]
    if len(ranked):
        lines += [
            f"fastest with data (points per 4x items): {_named(ranked.head(2))}",
            f"slowest: {_named(ranked.tail(2).iloc[::-1])}",
        ]
    groups = group_agreement(a)
    if groups:
        lines.append(f"groups: {groups[0]} of {groups[1]} as planted ({groups[2]} undetermined)")
    if len(a.sensitivity):
        lines += [f"{axis} classes: {decisions(a, axis)}" for axis in AXES]
    lines += list(graded)
    rank = rank_agreement(a)
    if rank:
        lines.append(f"rank agreement with planted_data_rank: {rank}")
    if gain is not None:
        said = f"; {curriculum}" if curriculum else ""
        lines.append("curriculum: " + _gain_text(gain, budget, base, seeds) + said)
    lines.append(f"report: {report}")
    return lines[:10]
