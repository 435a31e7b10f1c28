"""Shared-prefix ranking: each prompt read once, its texts scored as continuations, the output
layer applied only where a span is scored; the same sums as one full sequence per text."""

from __future__ import annotations

import json
import math

import pytest
import torch

from doit.data import kinds as ak
from doit.eval import predict
from doit.eval.evaluate import load_split_items
from doit.eval.predict import group_logprobs, predict_items, predict_to
from doit.models.chat import speaker_template
from doit.testing import continuation_logprob, tiny_model
from tests.tiny import FIXTURE, byte_bpe_tokenizer, metaspace_tokenizer

LOGPROB_FIELDS = ("choice_logprob", "choice_uncond")
RANKED_KINDS = {ak.OPEN, "mc_text", "tf_text", "multiselect_text"}


@pytest.fixture(scope="module")
def tok():
    tok = byte_bpe_tokenizer()
    tok.padding_side = "left"
    return tok


@pytest.fixture(scope="module")
def items():
    """Every ranked item of the fixture's test split in the text formulation."""
    text = load_split_items(FIXTURE, "test", formulation=ak.TEXT)
    ranked = [it for it in text if ak.kind(it["answer_kind"]).ranked is not None]
    assert {it["answer_kind"] for it in ranked} == RANKED_KINDS
    return ranked


def model_for(tok, arch: str):
    """A random 4-layer model over ``tok``: Llama, or ResFormer/SVFormer (value residual)."""
    fields = dict(vocab_size=len(tok), pad_token_id=tok.pad_token_id, max_position_embeddings=512)
    return tiny_model(arch, **fields)


def assert_same_predictions(shared: list[dict], full: list[dict]) -> None:
    """Every field equal, log-probabilities within 1e-4 (perplexities follow from them)."""
    assert [(p["type"], p["idx"]) for p in shared] == [(p["type"], p["idx"]) for p in full]
    for a, b in zip(shared, full):
        assert set(a) == set(b), a["type"]
        for key in a:
            if key in LOGPROB_FIELDS:
                assert a[key] == pytest.approx(b[key], abs=1e-4), (a["type"], a["idx"], key)
            elif key == "choice_ppl":
                assert a[key] == pytest.approx(b[key], rel=1e-4), (a["type"], a["idx"])
            else:
                assert a[key] == b[key], (a["type"], a["idx"], key)


@pytest.mark.parametrize("arch", ["llama", "resformer", "svformer"])
def test_shared_prefix_sums_equal_one_full_sequence_per_text(tok, items, arch):
    model = model_for(tok, arch)
    shared = predict_items(model, tok, items, batch_size=3)
    full = predict_items(model, tok, items, batch_size=3, path="full")
    assert_same_predictions(shared, full)
    assert not any("choice_full_sequences" in p for p in shared)  # every prompt was shared
    assert {p["answer_kind"] for p in shared} == RANKED_KINDS


def test_batch_size_does_not_change_the_sums(tok, items):
    model = model_for(tok, "resformer")
    one = predict_items(model, tok, items, batch_size=1)
    many = predict_items(model, tok, items, batch_size=16)
    assert_same_predictions(one, many)


def test_a_texts_continuation_sees_the_prompt_and_itself_only(tok):
    """Continuations packed after one prefix, as a token tree (two begin alike, one is the
    other's beginning, one comes between them in token order), score as each alone."""
    model = model_for(tok, "svformer")
    prefix = [5, 9, 13, 21]
    conts = [[30, 31, 32], [40, 41], [30, 31], [30, 35, 36], [7]]
    (packed,) = group_logprobs(model, [(prefix, conts)], tok.pad_token_id)
    alone = [continuation_logprob(model, prefix, c) for c in conts]
    assert packed == pytest.approx(alone, abs=1e-4)
    ids, _, _, _ = predict._tree_row([(prefix + c, len(prefix)) for c in conts])
    assert len(ids) == len(prefix) + 3 + 2 + 2 + 1  # 30 31 32 | 40 41 | 35 36 | 7: shared once


def test_the_head_sees_the_scored_positions_only(tok, items):
    model = model_for(tok, "llama")
    head_rows, full_calls = [], []
    hook = model.get_output_embeddings().register_forward_hook(
        lambda _m, args, _out: head_rows.append(tuple(args[0].shape))
    )
    whole = model.register_forward_hook(lambda *_: full_calls.append(1))
    try:
        preds = predict_items(model, tok, items, batch_size=4)
    finally:
        hook.remove()
        whole.remove()
    assert not full_calls  # the causal LM's forward (logits everywhere) never ran
    scored = sum(sum(p["choice_tokens"]) for p in preds)
    uncond = {t: n for it, p in zip(items, preds) for t, n in zip(_texts(it), p["choice_tokens"])}
    assert all(len(shape) == 2 for shape in head_rows)  # (positions, hidden): no length axis
    # each position that predicts a span token, once: texts that begin alike (and the first
    # token of every text of an item, predicted by the prompt's end) share positions
    assert len(items) < sum(rows for rows, _ in head_rows) < scored + sum(uncond.values())


def _texts(item: dict) -> list[str]:
    return ak.kind(item["answer_kind"]).ranked(item)


def newline_prompt_tokenizer():
    """A planted template: the generation prompt ends ``<assistant>\\n``, but an assistant turn
    renders ``<assistant>TEXT<eot>``, so the prompt's tokens begin no text's sequence."""
    tok = byte_bpe_tokenizer()
    tok.padding_side = "left"
    tail = "{%- if add_generation_prompt -%}<assistant>{%- endif -%}"
    assert tail in speaker_template()
    tok.chat_template = speaker_template().replace(
        tail, tail.replace("<assistant>", "<assistant>{{ '\\n' }}")
    )
    return tok


def test_a_template_that_does_not_share_the_prompt_falls_back_and_is_counted(items, tmp_path):
    tok = newline_prompt_tokenizer()
    model = model_for(tok, "resformer")
    out = tmp_path / "test.pred.jsonl"
    rules = predict_to(out, model, tok, items, 3, predict.budgets())
    shared = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert all(p["choice_full_sequences"] for p in shared)
    assert rules["n_ranked_full_sequences"] == {
        k: sum(it["answer_kind"] == k for it in items) for k in RANKED_KINDS
    }
    assert_same_predictions(shared, predict_items(model, tok, items, 3, path="full"))
    on_disk = json.loads(predict.rules_path(out).read_text(encoding="utf-8"))
    assert on_disk["n_ranked_full_sequences"] == rules["n_ranked_full_sequences"]


def test_the_speaker_template_shares_every_prompt_and_counts_none(tok, items, tmp_path):
    rules = predict_to(
        tmp_path / "p.jsonl", model_for(tok, "llama"), tok, items, 4, predict.budgets()
    )
    assert set(rules["n_ranked_full_sequences"]) == RANKED_KINDS
    assert sum(rules["n_ranked_full_sequences"].values()) == 0


def test_a_logit_soft_cap_or_a_maskless_attention_is_refused(tok, items):
    capped = model_for(tok, "llama")
    capped.config.final_logit_softcapping = 30.0
    with pytest.raises(ValueError, match="soft-caps or scales"):
        predict_items(capped, tok, items[:1])
    flash = model_for(tok, "llama")
    flash.config._attn_implementation = "flash_attention_2"
    with pytest.raises(ValueError, match="4D attention mask.*flash_attention_2"):
        predict_items(flash, tok, items[:1])


def test_an_unknown_path_is_refused(tok, items):
    with pytest.raises(ValueError, match="ranking path 'half'"):
        predict_items(model_for(tok, "llama"), tok, items[:1], path="half")


def test_padding_in_a_packed_batch_cannot_leak_into_scores(tok):
    """A short group beside a long one in one batch scores as it does alone (no NaN)."""
    model = model_for(tok, "resformer")
    short, long = ([7, 8], [[9], [10, 11]]), (list(range(3, 30)), [[40, 41, 42]])
    together = group_logprobs(model, [short, long], tok.pad_token_id)
    alone = [group_logprobs(model, [g], tok.pad_token_id)[0] for g in (short, long)]
    assert together == [pytest.approx(a, abs=1e-5) for a in alone]
    assert all(torch.isfinite(torch.tensor(x)).all() for x in together)


@pytest.mark.parametrize("make_tokenizer", [byte_bpe_tokenizer, metaspace_tokenizer])
def test_encode_gives_the_tokenizers_own_ids(items, make_tokenizer):
    """``encode`` reads a fast tokenizer's backend: the ids its ``__call__`` gives, on every
    rendered prompt and ranked turn of the fixture."""
    tok = make_tokenizer()
    rendered = [predict.prompt_text(tok, it) for it in items]
    rendered += [t for it in items for t in predict._turns(tok, it, _texts(it))]
    assert tok.is_fast and len(rendered) > len(items)
    for text in rendered:
        assert predict.encode(tok, text) == tok(text, add_special_tokens=False)["input_ids"]


def test_span_logprobs_and_sequence_ppl_score_each_span_in_its_own_sequence(tok):
    """Sequences of any starts, some beginning alike, packed by ``span_logprobs``: each span's
    sum is its continuation log-probability after its own context."""
    model = model_for(tok, "resformer")
    seqs = [([5, 9, 13, 21, 30], 4), ([5, 9, 13, 40, 41], 2), ([5, 9, 13], 1), ([8, 2], 1)]
    want = [continuation_logprob(model, ids[:start], ids[start:]) for ids, start in seqs]
    assert predict.span_logprobs(model, seqs, tok.pad_token_id) == pytest.approx(want, abs=1e-4)
    ppl = predict.sequence_ppl(model, seqs, tok.pad_token_id)
    lengths = [len(ids) - start for ids, start in seqs]
    assert ppl == pytest.approx([math.exp(-w / n) for w, n in zip(want, lengths)], rel=1e-4)
