"""The micro world's targets, checked on a micro study's scores: ``LETTER_TARGETS`` for a study scored
in the letter formulation, ``TEXT_TARGETS`` for one in the text formulation (``SETS``).

A micro study fine-tunes two bases over n items per ability (``recipes/grids/micro.yaml``);
the targets ask whether its abilities respond as the micro world planted them
(``ground_truth.json`` of ``python -m doit.data micro``): learnable abilities rise above chance
and respond to data, knowledge abilities respond to size, the planted plateaus stay flat.

Scores (``micro_scores``): each uniform or untuned cell's last epoch, valid and test pooled
(the micro world has 100 items per split; items of the two splits are distinct items), seeds
pooled, with ``doit.analysis.bootstrap``'s paired item bootstrap (seeds resampled too) and its
bias-corrected 95% CIs. ``studies/micro_study/targets.py`` is the rerun script.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from doit.analysis.bootstrap import Counts, bootstrap_counts
from doit.analysis.formulation import MAX
from doit.analysis.select import select_checkpoints
from doit.analysis.study import read_study
from doit.analysis.summary import ci
from doit.data.kinds import LETTER, TEXT

SPLITS = ("valid", "test")
KNOWLEDGE_SIZE = ("biology", "history", "chinese", "code")
# the text targets' planted-learnable abilities: all but math (math is asked for less: +3 points)
LEARNABLE = (
    "biology",
    "history",
    "code",
    "creative_writing",
    "chinese",
    "understanding",
    "reasoning",
)
REPLICATES = 2000


def micro_scores(
    study: str | Path,
    replicates: int = REPLICATES,
    seed: int = 0,
    formulation: str = MAX,
    cell_formulation: str | None = None,
) -> Counts:
    """Bootstrap counts of a study's base and uniform cells (no leave-one-out, no mixes): last
    epoch, valid and test pooled, the rows the analysis reads (`doit.analysis.study`: one
    formulation's per checkpoint, by ``formulation``, of the cells trained in
    ``cell_formulation``)."""
    rows = read_study(study, formulation, cell_formulation)
    table = rows.table
    keep = table["construction"].isin(["base", "curated"]) & table["excluded_ability"].isna()
    selected = select_checkpoints(table[keep], "last", splits=SPLITS)
    return bootstrap_counts(selected, rows.items, replicates, seed, splits=SPLITS)


def score_table(counts: Counts, truth: dict) -> pd.DataFrame:
    """One row per (ability, base, n) of the abilities in ``truth``: score, 95% CI, chance and
    the score above chance, in points (one decimal)."""
    rows = []
    for i, p in enumerate(counts.points.itertuples()):
        if p.ability not in truth:
            continue
        score, lo, hi = counts.score(i).ci()
        chance = 100 * truth[p.ability].get("chance", float("nan"))
        rows.append(
            {
                "ability": p.ability,
                "base": p.base,
                "n": int(p.n_per_ability),
                "score": round(score, 1),
                "lo": round(lo, 1),
                "hi": round(hi, 1),
                "chance": round(chance, 1),
                "above_chance": round(score - chance, 1),
            }
        )
    columns = ["ability", "base", "n", "score", "lo", "hi", "chance", "above_chance"]
    return pd.DataFrame(rows, columns=columns).sort_values(
        ["ability", "base", "n"], ignore_index=True
    )


def diff(counts: Counts, ability: str, a: tuple, b: tuple) -> tuple[float, float, float]:
    """Score of cell ``a`` minus cell ``b`` ((base, n) pairs), with its paired 95% CI; KeyError
    when the study lacks either."""
    i, j = (counts.column(ability, base=base, n_per_ability=n) for base, n in (a, b))
    return counts.difference(i, j).ci()


def _fmt(diffs: dict) -> str:
    return "; ".join(f"{a} {ci(d, lo, hi)}" for a, (d, lo, hi) in diffs.items())


def _learnable(c, truth, table, small, large, lo_n, hi_n):
    big = table[(table.base == large) & (table.n == hi_n)].set_index("ability")
    learn = [a for a in sorted(set(table.ability)) if big.loc[a, "above_chance"] >= 15]
    return len(learn) >= 7, f"{len(learn)}: {', '.join(learn)}"


def _data(c, truth, table, small, large, lo_n, hi_n):
    learnable = [a for a in sorted(set(table.ability)) if truth[a]["learnable"]]
    gains = {a: diff(c, a, (large, hi_n), (large, lo_n)) for a in learnable}
    ok = [a for a, (d, lo, _) in gains.items() if d >= 10 and lo > 0]
    return len(ok) >= 5, _fmt(gains)


def _size(c, truth, table, small, large, lo_n, hi_n):
    sizes = {a: diff(c, a, (large, hi_n), (small, hi_n)) for a in KNOWLEDGE_SIZE}
    ok = [a for a, (d, lo, _) in sizes.items() if d >= 5 and lo > 0]
    return len(ok) >= 3, _fmt(sizes)


def _data_over_size(ability):
    def check(c, truth, table, small, large, lo_n, hi_n):
        gain = diff(c, ability, (large, hi_n), (large, lo_n))[0]
        gap = diff(c, ability, (large, hi_n), (small, hi_n))[0]
        return gain > abs(gap), f"gain {gain:+.1f}, size gap {gap:+.1f}"

    return check


def _cells(rows) -> str:
    return ", ".join(f"{r.base} n={r.n}: {r.score} [{r.lo}, {r.hi}]" for r in rows.itertuples())


def _role_play(c, truth, table, small, large, lo_n, hi_n):
    rp = table[table.ability == "role_play"]
    ok = ((rp.lo <= 50) & (rp.hi >= 50)) | (rp.score - 50).abs().le(10)
    return bool(ok.all()), _cells(rp)


def _ethics(c, truth, table, small, large, lo_n, hi_n):
    et = table[table.ability == "ethics"]
    return bool((et.hi < 100 * truth["ethics"]["expected_plateau"] + 10).all()), _cells(et)


def _ethics_near(c, truth, table, small, large, lo_n, hi_n):
    """The text formulation's plateau (``expected_plateau_text``: only the sets of the gold's
    size are ranked, so the unsettled customs cost less): never above it + 10, and within
    +- 10 of it at the largest n."""
    et = table[table.ability == "ethics"]
    plateau = 100 * truth["ethics"]["expected_plateau_text"]
    top = et[et.n == hi_n]
    ok = bool((et.score <= plateau + 10).all() and (top.score - plateau).abs().le(10).all())
    return ok, f"text plateau {plateau:.1f}; " + _cells(et)


def _learnable_text(c, truth, table, small, large, lo_n, hi_n):
    big = table[(table.base == large) & (table.n == hi_n)].set_index("ability")
    above = {a: float(big.loc[a, "above_chance"]) for a in LEARNABLE}
    learn = [a for a, v in above.items() if v >= 15]
    detail = ", ".join(f"{a} {v:+.1f}" for a, v in above.items())
    return len(learn) >= 6, f"{len(learn)} of {len(LEARNABLE)}: {detail}"


def _data_text(c, truth, table, small, large, lo_n, hi_n):
    gains = {a: diff(c, a, (large, hi_n), (large, lo_n)) for a in LEARNABLE}
    ok = [a for a, (d, lo, _) in gains.items() if d >= 10 and lo > 0]
    return len(ok) >= 5, f"{len(ok)}: " + _fmt(gains)


def _math(c, truth, table, small, large, lo_n, hi_n):
    d, lo, hi = diff(c, "math", (large, hi_n), (large, lo_n))
    return d >= 3 and lo > 0, _fmt({"math": (d, lo, hi)})


def _creative(c, truth, table, small, large, lo_n, hi_n):
    cw = {b: diff(c, "creative_writing", (b, hi_n), (b, 64)) for b in (small, large)}
    return all(abs(d) <= 5 or lo <= 0 <= hi for d, lo, hi in cw.values()), _fmt(cw)


# the targets the letter and text sets share
SIZE = (
    "size responds: >= 3 of biology, history, chinese, code: the larger base ahead by >= 5 at "
    "n = {hi}, CI above 0",
    _size,
)
UNDERSTANDING = ("understanding: data gain exceeds the size gap", _data_over_size("understanding"))
REASONING = ("reasoning: data gain exceeds the size gap", _data_over_size("reasoning"))
ROLE_PLAY = ("plateau: role_play's CI includes 50 (or within 50 +- 10) at every n", _role_play)
CREATIVE = ("plateau: creative_writing n = 64 vs {hi} within 5 points or CI includes 0", _creative)

LETTER_TARGETS = (
    (
        "learnable: >= 7 of 10 abilities >= 15 points above chance, larger base, n = {hi}",
        _learnable,
    ),
    (
        "data responds: >= 5 learnable abilities gain >= 10 points, n = {lo} -> {hi}, CI above 0",
        _data,
    ),
    SIZE,
    UNDERSTANDING,
    REASONING,
    ROLE_PLAY,
    ("plateau: ethics below its planted plateau + 10 at every n", _ethics),
    CREATIVE,
)
TEXT_TARGETS = (
    (
        "learnable: >= 6 of the 7 planted-learnable abilities but math >= 15 points above chance, "
        "larger base, n = {hi}",
        _learnable_text,
    ),
    ("data responds: >= 5 of them gain >= 10 points, n = {lo} -> {hi}, CI above 0", _data_text),
    ("data responds: math gains >= 3 points, n = {lo} -> {hi}, CI above 0", _math),
    SIZE,
    UNDERSTANDING,
    REASONING,
    ROLE_PLAY,
    (
        "plateau: ethics never above its planted (text) plateau + 10, within +- 10 of it at n = {hi}",
        _ethics_near,
    ),
    CREATIVE,
)
SETS = {LETTER: LETTER_TARGETS, TEXT: TEXT_TARGETS}  # by the formulation the study is scored in


def check_targets(
    counts: Counts,
    truth: dict,
    small: str,
    large: str,
    lo_n: int,
    hi_n: int,
    which: str = LETTER,
) -> list[tuple[str, bool | None, str]]:
    """[(target, passed or None when the study lacks its cells, detail)]: the targets of a study
    scored in formulation ``which`` (``SETS``)."""
    table = score_table(counts, truth)
    results = []
    for name, check in SETS[which]:
        try:
            ok, detail = check(counts, truth, table, small, large, lo_n, hi_n)
        except KeyError as missing:  # a (base, n) cell the target compares is not in the study
            ok, detail = None, f"not measured: no cell {missing}"
        results.append((name.format(lo=lo_n, hi=hi_n), ok, detail))
    return results


def markdown(table: pd.DataFrame, checks: list) -> str:
    """The ability x (base, n) score table and the checked targets, as Markdown."""
    view = table.pivot_table(index=["ability", "chance"], columns=["base", "n"], values="score")
    md = [
        "| ability | chance | " + " | ".join(f"{b} n={n}" for b, n in view.columns) + " |",
        "|---|---|" + "---|" * len(view.columns),
    ]
    for (ability, chance), row in view.iterrows():
        md.append(f"| {ability} | {chance:.1f} | " + " | ".join(f"{v:.1f}" for v in row) + " |")
    marks = {True: "x", False: " ", None: "-"}
    lines = [f"- [{marks[ok]}] {name}: {detail}" for name, ok, detail in checks]
    return "\n".join(md + [""] + lines) + "\n"
