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


def _planted_rank_world(folder, design: str):
    """A planted world (per-item difficulty, a per-cell seed effect, untuned scores off chance,
    misspecified abilities) written as a study, and a ground truth ranking its abilities by
    their planted data sensitivity."""
    from doit.analysis.synthetic import DEFAULT_KINDS, planted_world

    kinds = {**DEFAULT_KINDS, "history": "smooth"}  # the world this test was written on
    world = planted_world(design, kinds, rng=0)
    rank = world.truth.set_index("ability")["data_sensitivity"].rank()
    truth = {"abilities": {a: {"planted_data_rank": float(r)} for a, r in rank.items()}}
    return world.write(folder), truth


@pytest.mark.parametrize(
    "design",
    ["a", pytest.param("b", marks=pytest.mark.slow)],  # b: > 10 s
)
def test_the_agreement_with_the_planted_order_has_a_bootstrap_interval(tmp_path, design):
    from scipy.stats import spearmanr

    from doit.analysis import summary
    from doit.analysis.bootstrap import interval
    from doit.analysis.features import NOT_RESAMPLED, RESAMPLED
    from doit.analysis.pipeline import Analysis
    from doit.analysis.settings import Settings

    source, truth = _planted_rank_world(tmp_path / "s", design)
    a = Analysis(str(source), Settings(rule="last", replicates=200), ground_truth=truth)
    rows = a.planted.set_index(["measured", "planted"])
    row = rows.loc[("data_sensitivity", "planted_data_rank")]
    reps = a.sensitivities.replicates
    order = a.sensitivity.set_index("ability").loc[list(truth["abilities"]), "data_sensitivity"]
    ranks = [truth["abilities"][k]["planted_data_rank"] for k in order.index]
    per = [
        round(spearmanr([reps[k]["data"][r] for k in order.index], ranks).statistic, 12)
        for r in range(200)
    ]  # rounded as the analysis rounds (replicates equal to the point compare equal)
    point = round(spearmanr(order.to_numpy(), ranks).statistic, 12)
    assert row["spearman"] == pytest.approx(point)
    assert (row["spearman_lo"], row["spearman_hi"]) == pytest.approx(interval(point, per))
    assert row["spearman_lo"] < row["spearman"] < row["spearman_hi"]
    assert row["interval_over"] == RESAMPLED
    assert rows.loc[("complexity", "steps"), "interval_over"] == NOT_RESAMPLED
    text = summary.rank_agreement(a)
    assert f"[{row['spearman_lo']:.2f}, {row['spearman_hi']:.2f}]" in text
    if design == "b":  # 400 items, 3 bases, 2 seeds: a clear order, a narrow interval
        assert row["spearman_lo"] > 0.6 and row["spearman_hi"] - row["spearman_lo"] < 0.3
    else:  # the demo's shape: 100 items, 1 seed: the replicates' orders scatter more
        assert row["spearman_hi"] - row["spearman_lo"] > 0.2
