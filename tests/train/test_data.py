"""doit.train.sft.data: which items, labels token by token, the tokenised cache."""

import contextlib
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from doit.data import abilities as ab
from doit.data import kinds as ak
from doit.data.load import load_items
from doit.data.mixes import per_ability_spec, sample_mix
from doit.data.subsets import build_subsets
from doit.models.chat import ASSISTANT, EOT, USER, prepare_tokenizer
from doit.train.sft import data
from doit.train.sft.args import DoitDataArguments
from tests.data.pools import uniform, write_pool
from tests.tiny import FIXTURE, train_tokenizer


@pytest.fixture(scope="module")
def tokenizer():
    tok = train_tokenizer()
    assert prepare_tokenizer(tok) == 3  # the base lacks the speaker tokens
    return tok


def expected_mask(ids: list[int], tok) -> list[bool]:
    """Independent of the template's masks: True from after each <assistant> to its <eot>."""
    a, e = tok.convert_tokens_to_ids(ASSISTANT), tok.convert_tokens_to_ids(EOT)
    out, inside = [], False
    for t in ids:
        if t == a:
            out.append(False)
            inside = True
        elif inside and t == e:
            out.append(True)
            inside = False
        else:
            out.append(inside)
    return out


def test_labels_mask_exactly_the_non_assistant_tokens_of_a_multi_turn_item(tokenizer):
    item = next(it for it in load_items(FIXTURE, "train") if len(it["messages"]) >= 4)
    template = data.training_template(tokenizer)
    ids, labels = data.encode(item["messages"], tokenizer, template, 1024, assistant_only=True)
    tokens = tokenizer.convert_ids_to_tokens(ids)
    assert tokens[0] == USER and tokens.count(ASSISTANT) == len(item["messages"]) // 2
    for i, (t, label, trained) in enumerate(
        zip(ids, labels, expected_mask(ids, tokenizer), strict=True)
    ):
        assert label == (t if trained else -100), f"token {i} {tokens[i]!r}"
    assert labels[-1] == tokenizer.convert_tokens_to_ids(EOT)  # every assistant turn ends trained
    assistant_text = tokenizer.decode([t for t in labels if t != -100])
    for turn in item["messages"][1::2]:
        assert turn["content"] in assistant_text


def test_full_sequence_loss_and_truncation(tokenizer):
    item = load_items(FIXTURE, "train")[0]
    template = data.training_template(tokenizer)
    ids, labels = data.encode(item["messages"], tokenizer, template, 7, assistant_only=False)
    assert labels == ids and len(ids) == 7


def test_items_come_from_doit_data(tmp_path):
    root = write_pool(tmp_path / "pool", uniform(6))
    args = DoitDataArguments(
        doit_dir=str(root), per_ability=4, exclude_abilities=["ethics"], sample_seed=3
    )
    got = data.train_items(args)
    keys = [k for k in ab.ABILITY_KEYS if k != "ethics"]
    want = sample_mix(per_ability_spec(4, 3, exclude=["ethics"]), root)
    assert [it["uid"] for it in got] == [it["uid"] for it in want] and len(got) == 36
    build_subsets(root, tmp_path / "cells", sizes=(4,), seed=3, abilities=keys)
    cell = load_items(tmp_path / "cells" / "n0004", "train")  # the subset command's cell
    assert sorted(it["uid"] for it in got) == sorted(it["uid"] for it in cell)


def test_items_are_drawn_then_rendered_in_the_runs_formulation(tmp_path):
    root = write_pool(tmp_path / "pool", uniform(4), synthetic=3)
    letter = data.train_items(DoitDataArguments(doit_dir=str(root), per_ability=2, synthetic=3))
    text = data.train_items(
        DoitDataArguments(doit_dir=str(root), per_ability=2, synthetic=3, formulation="text")
    )
    assert [it["uid"] for it in text] == [it["uid"] for it in letter]  # the same draw
    assert [ak.formulate(it, "text") for it in letter] == text
    kinds = {it["answer_kind"] for it in text}
    assert ak.MC_TEXT in kinds and ak.MC not in kinds and None in kinds  # synthetic: as drawn


def test_mix_and_synthetic_sources(tmp_path):
    root = write_pool(tmp_path / "pool", uniform(5), synthetic=20)
    mix = tmp_path / "mix.yaml"
    mix.write_text("seed: 1\ncounts: {math: 2, code: all}\nsynthetic: 3\n")
    items = data.train_items(DoitDataArguments(doit_dir=str(root), mix=str(mix)))
    assert sorted(it["ability"] for it in items) == ["code"] * 5 + ["math"] * 2 + [ab.SYNTHETIC] * 3
    syn = data.train_items(DoitDataArguments(doit_dir=str(root), synthetic=7))
    assert len(syn) == 7 and {it["ability"] for it in syn} == {ab.SYNTHETIC}


def _build(train, valid, tokenizer, max_length=64):
    template = data.training_template(tokenizer)
    return data.load_or_build(
        train, valid, tokenizer, template, max_length, True, contextlib.nullcontext()
    )


def test_second_build_is_a_cache_hit_and_does_not_tokenise(
    tmp_path, monkeypatch, tokenizer, caplog
):
    monkeypatch.setenv("DOIT_CACHE", str(tmp_path))
    train, valid = load_items(FIXTURE, "train"), load_items(FIXTURE, "valid", ood=False)
    with caplog.at_level(logging.INFO, logger="doit.train"):
        first, info = _build(train, valid, tokenizer)
        assert "tokenised-cache miss" in caplog.text
        caplog.clear()
        monkeypatch.setattr(data, "tokenise", lambda *a, **k: pytest.fail("tokenised again"))
        second, info2 = _build(train, valid, tokenizer)
    assert "tokenised-cache hit" in caplog.text and info2["cache_key"] == info["cache_key"]
    assert second["train"]["input_ids"] == first["train"]["input_ids"]
    assert [p.name for p in (tmp_path / "tok").iterdir()] == [info["cache_key"]]  # no temp left


def test_cache_key_follows_max_length_template_and_items(tokenizer):
    train, valid = load_items(FIXTURE, "train"), []
    template = data.training_template(tokenizer)
    key = data.cache_key(train, valid, tokenizer, template, 64, True)
    assert key == data.cache_key(train, valid, tokenizer, template, 64, True)
    assert key != data.cache_key(train, valid, tokenizer, template, 65, True)
    assert key != data.cache_key(train, valid, tokenizer, template + " ", 64, True)
    assert key != data.cache_key(train[1:], valid, tokenizer, template, 64, True)
    assert key != data.cache_key(train, valid, tokenizer, template, 64, False)


def test_build_groups_valid_by_ability(tmp_path, monkeypatch, tokenizer):
    monkeypatch.setenv("DOIT_CACHE", str(tmp_path))
    training = SimpleNamespace(
        max_length=128,
        assistant_only_loss=True,
        eval_strategy="epoch",
        packing=False,
        main_process_first=lambda **k: contextlib.nullcontext(),
    )
    args = SimpleNamespace(
        data=DoitDataArguments(doit_dir=str(FIXTURE), per_ability=1), training=training
    )
    built = data.build(args, tokenizer)
    assert built.train.column_names == ["input_ids", "labels"] and len(built.train) == 10
    assert list(built.valid) == [k for k in ab.ABILITY_KEYS if k in built.info["valid_counts"]]
    assert built.info["train_counts"] == {k: 1 for k in sorted(ab.ABILITY_KEYS)}
    assert built.info["tokenised"]["train"] == {"items": 10, "kept": 10, "dropped_no_target": 0}


def test_items_whose_answer_is_truncated_away_are_dropped(tokenizer):
    items = load_items(FIXTURE, "train")
    template = data.training_template(tokenizer)
    ds, dropped = data.tokenise(items, tokenizer, template, 40, assistant_only=True)
    assert dropped > 0 and len(ds) + dropped == len(items)
    assert all(any(t != -100 for t in labels) for labels in ds["labels"])


def test_native_format_uses_trls_training_template_of_the_base(tokenizer):
    from importlib import resources

    tok = train_tokenizer()
    chatml = resources.files("trl").joinpath("chat_templates", "qwen2_5.jinja").read_text()
    tok.chat_template = chatml
    assert prepare_tokenizer(tok, chat_format="native") == 0 and tok.chat_template == chatml
    template = data.training_template(tok)
    assert template != chatml and "{% generation %}" in template
    messages = [
        {"role": "user", "content": "问题一"},
        {"role": "assistant", "content": "答案一"},
        {"role": "user", "content": "问题二"},
        {"role": "assistant", "content": "答案二"},
    ]
    ids, labels = data.encode(messages, tok, template, 1024, assistant_only=True)
    trained = tok.decode([t for t in labels if t != -100])
    assert "答案一" in trained and "答案二" in trained and "问题" not in trained
    assert "<|im_end|>" in trained  # the end-of-turn of each assistant turn is a target


def test_bfd_packing_keeps_sequence_boundaries_for_the_padding_free_collator(tokenizer):
    from trl.trainer.sft_trainer import DataCollatorForLanguageModeling

    template = data.training_template(tokenizer)
    ds, _ = data.tokenise(load_items(FIXTURE, "train"), tokenizer, template, 128, True)
    packed = data.pack(ds, 256)
    assert set(packed.column_names) == {"input_ids", "labels", "seq_lengths"}
    assert len(packed) < len(ds) and sum(map(sum, packed["seq_lengths"])) == sum(
        map(len, ds["input_ids"])
    )
    collate = DataCollatorForLanguageModeling(
        pad_token_id=tokenizer.pad_token_id, padding_free=True
    )
    batch = collate([packed[0]])
    starts = (batch["position_ids"][0] == 0).nonzero().flatten().tolist()
    assert len(starts) == len(packed[0]["seq_lengths"])  # attention restarts at every item
    assert all(batch["labels"][0][s] == -100 for s in starts)


@pytest.mark.slow
def test_the_micro_recipe_keeps_every_micro_item_whole(micro_dir):
    """max_length cuts a conversation from its end; the micro recipe must never cut an item's
    answer (at 128 tokens, 18% of math's worked solutions lost their boxed answer)."""
    import yaml
    from transformers import AutoTokenizer

    from doit.models.chat import prepare_tokenizer
    from doit.train.sft.data import training_template

    config = yaml.safe_load(
        (Path(__file__).resolve().parents[2] / "recipes/configs/sft/micro/full.yaml").read_text()
    )
    tok = AutoTokenizer.from_pretrained(micro_dir / "tokenizer")
    prepare_tokenizer(tok)
    template = training_template(tok)
    longest = max(
        len(
            tok.apply_chat_template(it["messages"], chat_template=template, return_dict=True)[
                "input_ids"
            ]
        )
        for split in ("full", "valid", "test")
        for it in load_items(micro_dir, split, pool="full", ood=False)
    )
    assert 100 < longest <= config["max_length"]  # 118 since math takes 1-3 small steps
