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
