"""Complexity and Transference: the two ability features the study explains sensitivity with,
defined operationally here (definitions in README.md; both pluggable: ``explain`` takes any
feature columns of a features table).

- ``complexity(model, tokenizer, items)``: 1 - (acc_rank - chance) / (100 - chance), where
  acc_rank is the untuned base's format-free ranking accuracy: the share of items whose gold
  answer text has a higher mean per-token log-likelihood after the prompt than every
  alternative (each answer kind's ``alternatives`` in ``doit.data.kinds``: the other
  option texts for mc/multiselect, the answer of an item with the other label for tf, the
  two distractors for open items, the golds of 3 other items of the ability for cloze and
  math; for the text formulation's items, their other ranked texts: the items are measured
  as the analysed cells were asked them); beside it
  the gold answer's length in tokens, its reasoning steps (lines) and its mean per-token NLL.
- ``transference(counts)``: T_a = (S_a(LOO_a, n) - c_a) / (S_a(all, n) - c_a), summed over the
  (base, n) pairs that have both cells, with a bootstrap CI; empty when the full-mix gain's
  CI includes 0. Without leave-one-out cells, a weaker uniform-grid proxy, labelled as such.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from doit.analysis.bootstrap import Counts, Estimate, intervals
from doit.analysis.fits import same_n_rows, untuned_rows
from doit.data import kinds as ak

LOO, PROXY = (
    "leave-one-out",
    "uniform-grid proxy (weaker): share of the n_max gain over the base reached at n_min",
)


# --- Transference ------------------------------------------------------------------------------
def transference(counts: Counts) -> pd.DataFrame:
    pts = counts.points
    grid = same_n_rows(pts)
    rows = []
    for ability in sorted(pts["ability"].unique()):
        own = (pts["ability"] == ability).to_numpy()
        loo = own & (pts["excluded_ability"].astype("string") == ability).fillna(False).to_numpy()
        if loo.any():
            rows.append(_loo(counts, ability, own & grid, loo))
        else:
            rows.append(_proxy(counts, ability, own & grid, own))
    return pd.DataFrame(rows)


def _above_chance(counts, idx) -> Estimate:
    """The sum over columns ``idx`` of score - chance, in points."""
    c = counts.points["chance"].to_numpy(float)[idx]
    scores = counts.scores(idx)
    return Estimate(scores.point - c, scores.reps - c).total()


def _loo(counts, ability, full_mask, loo_mask):
    sums = loo_sums(counts, ability, full_mask, loo_mask)
    return _row(ability, LOO, sums.pairs, sums.gain, sums.kept)


@dataclass(frozen=True)
class LooSums:
    """Over ``pairs`` (base, n) pairs with both a uniform cell and the cell without an
    ability, the sums of that ability's score minus chance in the uniform cells (``gain``) and
    in the leave-one-out cells (``kept``), in points, with their replicates."""

    pairs: int
    gain: Estimate
    kept: Estimate


def loo_sums(
    counts: Counts, ability: str, full_mask=None, loo_mask=None, bases=None, anchored=False
) -> LooSums:
    """``LooSums`` of ``ability``'s leave-one-out pairs (masks: the uniform and the
    leave-one-out points of ``ability``; default every one in ``counts``), of the ``bases``
    named (None: every base). ``anchored``: gains over the pair's base's own untuned (n = 0)
    score instead of chance (a pair whose base has no untuned cell is left out), so a base
    that starts above chance does not count its head start as gain kept without own data."""
    pts = counts.points
    if full_mask is None:
        own = (pts["ability"] == ability).to_numpy()
        full_mask = own & same_n_rows(pts)
        left_out = (pts["excluded_ability"].astype("string") == ability).fillna(False)
        loo_mask = own & left_out.to_numpy(dtype=bool)
    key = ["base", "n_per_ability"]
    full = pts[full_mask][key].assign(i_all=np.nonzero(full_mask)[0])
    left = pts[loo_mask][key].assign(i_loo=np.nonzero(loo_mask)[0])
    pairs = full.merge(left, on=key)
    if bases is not None:
        pairs = pairs[pairs["base"].isin(list(bases))]
    if not anchored:
        gain = _above_chance(counts, pairs["i_all"].to_numpy())
        kept = _above_chance(counts, pairs["i_loo"].to_numpy())
        return LooSums(len(pairs), gain, kept)
    untuned = untuned_rows(pts) & (pts["ability"] == ability).to_numpy()
    at = pd.Series(np.nonzero(untuned)[0], index=pts.loc[untuned, "base"].to_numpy())
    pairs = pairs[pairs["base"].isin(at.index)]
    i0 = at[~at.index.duplicated()].reindex(pairs["base"]).to_numpy(int)
    gain = counts.difference(pairs["i_all"].to_numpy(), i0).total()
    kept = counts.difference(pairs["i_loo"].to_numpy(), i0).total()
    return LooSums(len(pairs), gain, kept)


def _proxy(counts, ability, grid_mask, own):
    pts = counts.points
    sub = pts[grid_mask]
    base_of = {
        b: i for i, b in pts[own & (pts["construction"] == "base").to_numpy()]["base"].items()
    }
    sub = sub[sub["base"].isin(base_of)]
    n = sub["n_per_ability"].astype(float)
    if n.nunique() < 2:  # one n: n_min = n_max, the proxy would be 1 by construction
        why = (
            "no untuned base (n = 0) cell"
            if not base_of
            else f"{n.nunique()} distinct n > 0 beside an untuned base"
        )
        row = _row(ability, PROXY, 0, Estimate(np.nan, None), Estimate(np.nan, None))
        return {
            **row,
            "transference_note": f"proxy needs an untuned base cell and >= 2 distinct "
            f"n > 0 of the same base: {why}",
        }
    lo, hi = sub[n == n.min()], sub[n == n.max()]
    gain = counts.difference(np.asarray(hi.index), np.asarray(hi["base"].map(base_of))).total()
    kept = counts.difference(np.asarray(lo.index), np.asarray(lo["base"].map(base_of))).total()
    return _row(ability, PROXY, len(hi), gain, kept)


def _row(ability, method, pairs, gain: Estimate, kept: Estimate):
    """features.csv's Transference columns from the gain and kept sums over ``pairs``."""
    g_lo, g_hi = gain.interval()
    row = {
        "ability": ability,
        "transference_method": method,
        "transference_pairs": pairs,
        "full_gain": gain.point / max(pairs, 1),
        "full_gain_lo": g_lo / max(pairs, 1),
        "full_gain_hi": g_hi / max(pairs, 1),
        "transference": np.nan,
        "transference_lo": np.nan,
        "transference_hi": np.nan,
        "transference_note": "",
    }
    if gain.reps is None or np.isnan(g_lo):
        row["transference_note"] = "no cells to measure it"
    elif g_lo <= 0 <= g_hi:
        row["transference_note"] = "empty: the full-mix gain's CI includes 0"
    else:
        t = kept.point / gain.point
        with np.errstate(divide="ignore", invalid="ignore"):
            reps = kept.reps / gain.reps
        lo, hi = Estimate(t, reps[np.isfinite(reps)]).interval()
        row.update(transference=t, transference_lo=lo, transference_hi=hi)
    return row


# --- Complexity ---------------------------------------------------------------------------------
def candidates(item: dict, same_ability: list[dict]) -> tuple[str, list[str]] | None:
    """(gold answer text, alternative texts) for the ranking test, or None when the item has
    no alternatives to rank against: its answer kind's ``alternatives``."""
    return ak.kind(item["answer_kind"]).alternatives(item, same_ability)


def complexity(model, tokenizer, items: list[dict], batch_size: int = 16) -> pd.DataFrame:
    """features.csv's Complexity columns per ability, from an untuned base's likelihoods."""
    from doit.eval.predict import choice_sequences, max_length, span_logprobs

    limit = max_length(model, tokenizer)
    by_ability: dict[str, list[dict]] = {}
    for it in items:
        by_ability.setdefault(it["ability"], []).append(it)
    rows = []
    for ability, mine in sorted(by_ability.items()):
        hits, chance, length, nll, steps = [], [], [], [], []
        for it in mine:
            pair = candidates(it, mine)
            if pair is None:
                continue
            gold, alts = pair
            seqs = choice_sequences(tokenizer, it, limit, [gold, *alts])
            if seqs is None:  # longer than the base's context: never cut, not ranked
                continue
            sums = []
            for i in range(0, len(seqs), batch_size):
                sums += span_logprobs(model, seqs[i : i + batch_size], tokenizer.pad_token_id)
            mean = [s / max(len(q) - start, 1) for s, (q, start) in zip(sums, seqs)]
            hits.append(mean[0] > max(mean[1:]))
            chance.append(1 / (1 + len(alts)))
            length.append(len(seqs[0][0]) - seqs[0][1])
            nll.append(-mean[0])
            steps.append(len([x for x in it["messages"][-1]["content"].splitlines() if x.strip()]))
        if not hits:
            continue
        acc, c = 100 * float(np.mean(hits)), 100 * float(np.mean(chance))
        rows.append(
            {
                "ability": ability,
                "complexity": 1 - (acc - c) / (100 - c),
                "acc_rank": acc,
                "chance_rank": c,
                "ranked_items": len(hits),
                "answer_tokens": float(np.mean(length)),
                "reasoning_steps": float(np.mean(steps)),
                "gold_nll": float(np.mean(nll)),
            }
        )
    return pd.DataFrame(rows)


# --- Explain ------------------------------------------------------------------------------------
def explain(
    sens: pd.DataFrame,
    reps: dict,
    feats: pd.DataFrame,
    features=("complexity", "transference"),
    seed: int = 0,
) -> pd.DataFrame:
    """Regress each sensitivity on the features across abilities: coefficients with bootstrap
    CIs (abilities resampled, each replicate on its own sensitivity replicate), R^2 and
    leave-one-ability-out predictive R^2. Features missing for every ability are dropped."""
    rng = np.random.default_rng(seed)
    df = sens.merge(feats, on="ability", how="inner")
    use = [f for f in features if f in df and df[f].notna().sum() >= 3]
    rows = []
    for target in ("data_sensitivity", "size_sensitivity"):
        d = df.dropna(subset=[target, *use])
        if not use or len(d) < len(use) + 2:
            continue
        X = np.column_stack([np.ones(len(d)), d[use].to_numpy(float)])
        y = d[target].to_numpy(float)
        beta = np.linalg.lstsq(X, y, rcond=None)[0]
        r2 = 1 - ((y - X @ beta) ** 2).sum() / ((y - y.mean()) ** 2).sum()
        press = [
            y[i] - X[i] @ np.linalg.lstsq(np.delete(X, i, 0), np.delete(y, i), rcond=None)[0]
            for i in range(len(y))
        ]
        q2 = 1 - np.sum(np.square(press)) / ((y - y.mean()) ** 2).sum()
        axis = target.split("_")[0]
        rep = (
            np.column_stack([reps[a][axis] for a in d["ability"]])
            if all(reps.get(a, {}).get(axis) is not None for a in d["ability"])
            else None
        )
        boot = []
        for r in range(200 if rep is None else rep.shape[0]):
            pick = rng.integers(0, len(y), len(y))
            yr = y[pick] if rep is None else rep[r, pick]
            boot.append(np.linalg.lstsq(X[pick], yr, rcond=None)[0])
        lo, hi = intervals(beta, np.array(boot))
        for j, name in enumerate(["intercept", *use]):
            rows.append(
                {
                    "target": target,
                    "term": name,
                    "coef": beta[j],
                    "coef_lo": lo[j],
                    "coef_hi": hi[j],
                    "r2": r2,
                    "loao_r2": q2,
                    "abilities": len(y),
                }
            )
    return pd.DataFrame(rows)


PLANTED = {
    "transference": ["shared_fraction"],
    "complexity": ["steps", "needs_pretrained_facts"],
    "data_sensitivity": ["learnable", "expected_plateau", "saturates_at", "planted_data_rank"],
}


AXES = {"data_sensitivity": "data", "size_sensitivity": "size"}  # sensitivity -> replicate key
RESAMPLED = "the sensitivities' bootstrap replicates (items, and seeds where a point has >= 2)"
NOT_RESAMPLED = "none: the measured feature has no bootstrap replicates"


def planted_correlations(
    measured: pd.DataFrame, truth: dict, replicates: dict | None = None
) -> pd.DataFrame:
    """Spearman correlations of measured features with a micro corpus's planted properties;
    for a sensitivity, with the 95% interval of the Spearman of every bootstrap replicate's
    sensitivities (``replicates``: ability -> {"data", "size"} replicate arrays, the
    sensitivities'; one interval rule, `bootstrap.interval`), ``interval_over`` saying what
    it resamples."""
    planted = pd.DataFrame(
        [
            {"ability": a, **{k: _num(v.get(k)) for ks in PLANTED.values() for k in ks}}
            for a, v in truth.get("abilities", {}).items()
        ]
    )
    df = measured.merge(planted, on="ability", how="inner")
    rows = []
    for mine, theirs in PLANTED.items():
        for t in theirs:
            if mine not in df or t not in df:
                continue
            d = df[["ability", mine, t]].dropna()
            agreement = _agreement(d, mine, t, replicates or {})
            rows.append({"measured": mine, "planted": t, "abilities": len(d), **agreement})
    return pd.DataFrame(rows)


def _agreement(d: pd.DataFrame, mine: str, planted: str, replicates: dict) -> dict:
    """The Spearman of ``d[mine]`` with ``d[planted]``, its interval over the replicates of
    ``mine`` (a sensitivity with replicates for every ability of ``d``) and what they resample."""
    out = {"spearman": np.nan, "spearman_lo": np.nan, "spearman_hi": np.nan}
    out["interval_over"] = NOT_RESAMPLED
    if len(d) < 3 or d[planted].nunique() < 2:
        return out
    reference = d[planted].to_numpy(float)
    out["spearman"] = rank_correlations(d[[mine]].to_numpy(float).T, reference)[0]
    axis = AXES.get(mine)
    reps = [replicates.get(a, {}).get(axis) for a in d["ability"]] if axis else [None]
    if any(r is None for r in reps):
        return out
    per_replicate = rank_correlations(np.column_stack(reps), reference)
    out["spearman_lo"], out["spearman_hi"] = Estimate(out["spearman"], per_replicate).interval()
    out["interval_over"] = RESAMPLED
    return out


def rank_correlations(reps: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """The Spearman correlation of each row of ``reps`` (R, n) with ``reference`` (n,) (ties:
    average ranks, as `scipy.stats.spearmanr`); NaN for a row with a NaN or a constant row.
    Rounded to 12 decimals: over n abilities it takes few values, and replicates that equal the
    point must compare equal to it (the interval's bias correction counts them)."""
    ranks = rankdata(reps, axis=1)
    ref = rankdata(reference)
    a = ranks - ranks.mean(1, keepdims=True)
    b = ref - ref.mean()
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = (a @ b) / np.sqrt((a**2).sum(1) * (b**2).sum())
    rho[np.isnan(reps).any(1)] = np.nan
    return np.round(rho, 12)


def _num(v):
    if isinstance(v, list):
        return float(np.mean(v))
    if isinstance(v, bool):
        return float(v)
    return np.nan if v is None else float(v)
