"""Counts owns scores, paired differences and intervals: its methods, the one interval rule,
and source scans that no module outside bootstrap.py does its arithmetic again."""

import io
import tokenize
from pathlib import Path

import numpy as np
import pytest

from doit.analysis.bootstrap import Z, bootstrap_counts, interval, intervals
from doit.analysis.fits import fit_grid, fits_table
from doit.analysis.select import select_checkpoints
from doit.analysis.synthetic import Curve, planted_study

DOIT = Path(__file__).resolve().parents[2] / "doit"
OWNER = DOIT / "analysis" / "bootstrap.py"


def _tokens(text: str) -> list[tuple[int, str]]:
    """(type, string) of the code's tokens: strings and comments are their own tokens, so a
    docstring that mentions ``counts.k[`` is not code."""
    skip = (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT)
    toks = tokenize.generate_tokens(io.StringIO(text).readline)
    return [(t.type, t.string) for t in toks if t.type not in skip]


def count_arithmetic(text: str) -> list[str]:
    """Every ``.k[`` / ``.m[`` and ``["k"]`` / ``["m"]`` in ``text``'s code."""
    toks, found = _tokens(text), []
    for (_, a), (tb, b), (_, c) in zip(toks, toks[1:], toks[2:]):
        if a == "." and tb == tokenize.NAME and b in ("k", "m") and c == "[":
            found.append(f".{b}[")
        if a == "[" and tb == tokenize.STRING and b.strip("'\"") in ("k", "m") and c == "]":
            found.append(f"[{b}]")
    return found


def interval_copies(text: str) -> list[str]:
    """Percentile calls and a 1.96-like literal in ``text``'s code (the interval rule and z
    are bootstrap.py's)."""
    return [
        s
        for kind, s in _tokens(text)
        if (kind == tokenize.NAME and s in ("percentile", "nanpercentile", "quantile"))
        or (kind == tokenize.NUMBER and 1.95 < float(s.rstrip("jJ")) < 1.97)
    ]


def test_the_scans_find_what_they_look_for():
    planted = 'x = 100 * counts.k[:, i] / counts.m[:, i]\ny = pts["k"] / pts["m"]\n'
    assert count_arithmetic(planted) == [".k[", ".m[", '["k"]', '["m"]']
    assert count_arithmetic('"""counts.k[:, i] in a docstring"""\nfit.k / fit.m\n') == []
    assert interval_copies("lo = np.percentile(r, 2.5)\nz = 1.959964\n") == [
        "percentile",
        "1.959964",
    ]


def test_no_module_outside_bootstrap_does_count_arithmetic():
    found = {
        str(p.relative_to(DOIT)): hits
        for p in sorted(DOIT.rglob("*.py"))
        if p != OWNER and (hits := count_arithmetic(p.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_the_analysis_has_one_interval_rule():
    found = {
        str(p.relative_to(DOIT)): hits
        for p in sorted((DOIT / "analysis").rglob("*.py"))
        if p != OWNER and (hits := interval_copies(p.read_text(encoding="utf-8")))
    }
    assert found == {}
    assert Z == pytest.approx(1.959964, abs=1e-6)


def test_the_interval_is_bias_corrected_and_its_column_form_agrees():
    rng = np.random.default_rng(0)
    reps = rng.normal(0, 1, size=(4000, 3)) ** 2  # skewed
    median = np.median(reps[:, 0])
    lo, hi = interval(median, reps[:, 0])  # the point at the median: plain percentiles
    assert (lo, hi) == pytest.approx(tuple(np.percentile(reps[:, 0], [2.5, 97.5])), rel=1e-3)
    low_point = np.percentile(reps[:, 0], 20)  # most replicates above the point: shifted down
    shifted = interval(low_point, reps[:, 0])
    assert shifted[0] < lo and shifted[1] < hi
    points = np.array([median, low_point, 1.0])
    vec_lo, vec_hi = intervals(points, reps)
    for j, point in enumerate(points):
        assert (vec_lo[j], vec_hi[j]) == interval(point, reps[:, j])
    assert np.isnan(intervals([1.0, 2.0], None)[0]).all()


@pytest.fixture(scope="module")
def counts():
    curves = {"biology": Curve(a=-1.0, b_data=0.4), "code": Curve(a=-0.5, b_data=0.2)}
    table, items, _ = planted_study(curves, ns=(4, 16, 64, 256), seeds=2, rng=1)
    return bootstrap_counts(select_checkpoints(table), items, replicates=300, seed=0)


def test_counts_methods_give_scores_pooled_scores_and_paired_differences(counts):
    pts = counts.points
    i = counts.column("biology", base="l", n_per_ability=256)
    j = counts.column("biology", base="l", n_per_ability=4)
    score = counts.score(i)
    assert score.point == pts["score"].iloc[i] == 100 * pts["k"].iloc[i] / pts["m"].iloc[i]
    assert score.reps.shape == (300,) and score.ci()[1] < score.point < score.ci()[2]
    d = counts.difference(i, j)
    assert d.point == pytest.approx(score.point - counts.score(j).point)
    assert d.reps == pytest.approx(score.reps - counts.score(j).reps)
    assert counts.difference(i, i).ci() == (0.0, 0.0, 0.0)  # paired: the same draws
    pair = counts.difference(np.array([i, j]), np.array([j, j]))
    assert pair.total().point == pytest.approx(d.point) and pair.point[1] == 0
    both = counts.pooled([i, j])
    k, m = pts["k"].iloc[[i, j]].sum(), pts["m"].iloc[[i, j]].sum()
    assert both.point == pytest.approx(100 * k / m)
    tally = counts.tally([i, j])
    assert tally.correct.tolist() == pts["k"].iloc[[i, j]].tolist()
    assert tally.correct_reps.shape == tally.items_reps.shape == (300, 2)
    assert counts.items(i) == pts["m"].iloc[i]


def test_counts_macro_follows_the_macro_rule(counts):
    at = {
        a: counts.score(counts.column(a, base="l", n_per_ability=256)) for a in ("biology", "code")
    }
    macro = counts.macro(at, expected=["biology", "code", "ceval_physician"])  # OOD: not in it
    assert macro.point == pytest.approx((at["biology"].point + at["code"].point) / 2)
    assert macro.reps == pytest.approx((at["biology"].reps + at["code"].reps) / 2)
    assert counts.macro({"biology": at["biology"]}, expected=["biology", "code"]) is None


def test_fits_intervals_are_the_bias_corrected_rule(counts):
    grid = fit_grid(counts)
    table = fits_table(grid).set_index(["ability", "base", "axis", "form"])
    fit = grid.data[("biology", "l", "curated")]
    row = table.loc[("biology", "l", "data", "logistic")]
    reps = fit.reps["logistic"]
    assert (row["a_lo"], row["a_hi"]) == interval(fit.theta["logistic"][0], reps[:, 0])
    assert (row["b_lo"], row["b_hi"]) == interval(fit.theta["logistic"][1], reps[:, 1])


def test_the_bias_correction_ignores_a_median_shift_within_its_monte_carlo_noise():
    """z0 is estimated from the replicates' share below the point; at 200 replicates of an
    unbiased estimate that share wanders by +-0.035 and shifted the interval at random (the
    size axis lost 1.2 points of coverage). Within its noise, the plain percentile interval."""
    rng = np.random.default_rng(3)
    plain = 0
    for _ in range(200):
        reps = rng.normal(0, 1, 200)
        got = interval(0.0, reps)  # the true median: any shift is noise
        plain += got == pytest.approx(tuple(np.percentile(reps, [2.5, 97.5])))
    assert plain >= 180
    reps = rng.normal(0, 1, 200)
    biased = np.percentile(reps, 20)  # a median bias well beyond the noise: still corrected
    assert interval(biased, reps)[1] < np.percentile(reps, 97.5) - 0.2


def test_the_cluster_bootstrap_resamples_whole_clusters_and_is_wider_on_clustered_items():
    """Items in clusters of 4 that share one outcome per cell (four forms of one fact): the
    item bootstrap treats them as 4x the information they are; drawing clusters does not."""
    curves = {"biology": Curve(a=0.0, b_data=0.3)}
    table, items, _ = planted_study(curves, ns=(4, 64), n_items=120, rng=3)
    items = items.copy()
    items["cluster"] = (items["idx"] // 4).astype(str)
    first = items.groupby(["cell", "epoch", "split", "cluster"])["correct"].transform("first")
    items["correct"] = first  # every item of a cluster answers as its cluster's first
    selected = select_checkpoints(table)
    plain = bootstrap_counts(selected, items.drop(columns="cluster"), replicates=400, seed=0)
    clustered = bootstrap_counts(selected, items, replicates=400, seed=0)
    i = clustered.column("biology", base="l", n_per_ability=64)
    assert clustered.score(i).point == plain.score(i).point
    assert clustered.m[:, i].tolist() == [clustered.m[0, i]] * 400  # all clusters are 4 items
    assert np.all(clustered.m[:, i] % 4 == 0) and np.all(clustered.k[:, i] % 4 == 0)
    wide, narrow = (np.std(c.score(i).reps) for c in (clustered, plain))
    assert wide > 1.5 * narrow  # sqrt(4) = 2 in expectation
    j = clustered.column("biology", base="l", n_per_ability=4)
    assert np.std(clustered.difference(i, j).reps) > 1.5 * np.std(plain.difference(i, j).reps)


def test_without_clusters_the_draws_are_the_item_bootstraps():
    curves = {"biology": Curve(a=0.0, b_data=0.3)}
    table, items, _ = planted_study(curves, ns=(4, 64), rng=3)
    selected = select_checkpoints(table)
    before = bootstrap_counts(selected, items, replicates=50, seed=0)
    singles = items.assign(cluster=None)
    after = bootstrap_counts(selected, singles, replicates=50, seed=0)
    assert np.array_equal(before.k, after.k) and np.array_equal(before.m, after.m)
