"""Complexity on a tiny random model: every ability ranked, values in their ranges; the
candidates each answer kind ranks against."""

import pytest

from doit.analysis.features import candidates
from doit.data import kinds as ak
from doit.data.load import load_items
from tests.tiny import FIXTURE


@pytest.fixture(scope="module")
def items():
    return [i for i in load_items(FIXTURE, "test") if not i["ability"].startswith("ceval")]


def test_candidates_per_answer_kind(items):
    by = {}
    for it in items:
        by.setdefault(it["answer_kind"], it)
    same = lambda it: [o for o in items if o["ability"] == it["ability"]]  # noqa: E731
    gold, alts = candidates(by["mc"], same(by["mc"]))
    assert gold == "线粒体" and alts == ["核糖体", "高尔基体", "细胞壁"]
    gold, alts = candidates(by["open"], same(by["open"]))
    assert gold == by["open"]["choices"][0] and len(alts) == 2
    gold, alts = candidates(by["math"], same(by["math"]))
    assert gold == "7" and 1 <= len(alts) <= 3 and "7" not in alts
    text = ak.formulate(by["mc"], "text")  # as a text-formulation study asked it
    assert candidates(text, same(by["mc"])) == ("线粒体", ["核糖体", "高尔基体", "细胞壁"])


@pytest.mark.slow
def test_complexity_on_a_tiny_model(items):
    from doit.analysis.features import complexity
    from doit.testing import tiny_llama
    from tests.tiny import byte_bpe_tokenizer

    tok = byte_bpe_tokenizer()
    out = complexity(tiny_llama(tok).eval(), tok, items).set_index("ability")
    assert len(out) == len({i["ability"] for i in items})
    assert ((out["acc_rank"] >= 0) & (out["acc_rank"] <= 100)).all()
    assert ((out["chance_rank"] > 0) & (out["chance_rank"] < 100)).all()
    assert (out["gold_nll"] > 0).all() and (out["answer_tokens"] >= 1).all()


def test_rank_correlations_are_scipys_spearman_per_replicate():
    import numpy as np
    from scipy.stats import spearmanr

    from doit.analysis.features import rank_correlations

    rng = np.random.default_rng(0)
    reps = rng.integers(0, 4, size=(50, 6)).astype(float)  # ties in most rows
    reference = np.array([1.0, 2.0, 2.0, 3.0, 5.0, 4.0])
    got = rank_correlations(reps, reference)
    want = [spearmanr(r, reference).statistic for r in reps]
    np.testing.assert_allclose(got, want, equal_nan=True)
    reps[0, 2] = np.nan
    assert np.isnan(rank_correlations(reps, reference)[0])


def _planted_rank_study(folder, n_items: int, rng: int):
    """Six abilities whose data slopes rise in their planted_data_rank's order, two bases,
    per-item rows beside the table; the ground truth naming the ranks."""
    from doit.analysis.synthetic import Curve, planted_study

    keys = ("biology", "history", "code", "math", "ethics", "chinese")
    curves = {k: Curve(a=-1.2, b_data=0.1 * i, b_size=0.1) for i, k in enumerate(keys)}
    table, its, _ = planted_study(curves, n_items=n_items, epochs=(5.0,), rng=rng)
    folder.mkdir()
    table.to_csv(folder / "t.csv", index=False)
    its.to_csv(folder / "t.items.csv", index=False)
    truth = {"abilities": {k: {"planted_data_rank": i + 1} for i, k in enumerate(keys)}}
    return folder / "t.csv", truth


@pytest.mark.parametrize("n_items", [30, 400])
def test_the_agreement_with_the_planted_order_has_a_bootstrap_interval(tmp_path, n_items):
    from scipy.stats import spearmanr

    from doit.analysis import summary
    from doit.analysis.bootstrap import interval
    from doit.analysis.features import NOT_RESAMPLED, RESAMPLED
    from doit.analysis.pipeline import Analysis
    from doit.analysis.settings import Settings

    source, truth = _planted_rank_study(tmp_path / "s", n_items, rng=3)
    a = Analysis(str(source), Settings(rule="last", replicates=300), ground_truth=truth)
    rows = a.planted.set_index(["measured", "planted"])
    row = rows.loc[("data_sensitivity", "planted_data_rank")]
    reps = a.sensitivities.replicates
    order = a.sensitivity.set_index("ability").loc[list(truth["abilities"]), "data_sensitivity"]
    ranks = [truth["abilities"][k]["planted_data_rank"] for k in order.index]
    per = [
        round(spearmanr([reps[k]["data"][r] for k in order.index], ranks).statistic, 12)
        for r in range(300)
    ]  # rounded as the analysis rounds (replicates equal to the point compare equal)
    point = round(spearmanr(order.to_numpy(), ranks).statistic, 12)
    assert row["spearman"] == pytest.approx(point)
    assert (row["spearman_lo"], row["spearman_hi"]) == pytest.approx(interval(point, per))
    assert row["spearman_lo"] <= row["spearman"] <= row["spearman_hi"]
    assert row["interval_over"] == RESAMPLED
    assert rows.loc[("complexity", "steps"), "interval_over"] == NOT_RESAMPLED
    text = summary.rank_agreement(a)
    assert f"[{row['spearman_lo']:.2f}, {row['spearman_hi']:.2f}]" in text
    if n_items == 400:  # a clear order: the interval lies well above 0
        assert row["spearman_lo"] > 0.5
    else:  # 30 items: the replicates' orders scatter
        assert row["spearman_hi"] - row["spearman_lo"] > 0.3
