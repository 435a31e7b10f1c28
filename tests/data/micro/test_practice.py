"""Exam practice in the micro pretraining text: train-split facts only, answers correct."""

from __future__ import annotations

import random
import re

import pytest

from doit.data.abilities import CLOZE, MC, TF
from doit.data.micro.build import FACT_GROUPS, HELD_OUT_FACTS, SPECS, draft_ability
from doit.data.micro.drafts import ItemContext
from doit.data.micro.practice import PRACTICE_MAKERS, practice_doc, practice_documents
from doit.data.micro.world import build_world, split_facts

INLINE_OPTION = re.compile(r"(?:^| )([A-F])\. (\S+)")
LETTER_ANSWER = re.compile(r"(?:答案：|正确答案是|答案是|应该选)([A-F])。?$")
TEXT_ANSWER = re.compile(r"(?:答案：|正确答案是|答案是|答：|回答：)(\S+?)。?$")


@pytest.fixture(scope="module")
def world_and_facts():
    world = build_world(0)
    rng = random.Random("micro-split:0")
    facts = {g: split_facts(world.facts(g), rng, HELD_OUT_FACTS) for g in FACT_GROUPS}
    return world, facts


def test_every_practice_doc_states_its_drafts_answer(world_and_facts):
    world, facts = world_and_facts
    train = {g: s["train"] for g, s in facts.items()}
    rng = random.Random(1)
    seen = set()
    for make, _, knowledge in PRACTICE_MAKERS:
        ctx = ItemContext(world, rng, train, "train")
        for _ in range(200):
            draft = make(ctx)
            doc = practice_doc(draft, rng, knowledge)
            assert "\n" not in doc
            if draft.kind == MC and not INLINE_OPTION.search(doc):  # question-and-answer form
                assert TEXT_ANSWER.search(doc).group(1) == draft.options[0], doc
                seen.add("qa")
            elif draft.kind == MC:
                options = dict(INLINE_OPTION.findall(doc))
                assert sorted(options.values()) == sorted(draft.options), doc
                assert options[LETTER_ANSWER.search(doc).group(1)] == draft.options[0], doc
                seen.add(MC)
            else:
                assert draft.kind in (TF, CLOZE)
                assert TEXT_ANSWER.search(doc).group(1) == draft.gold, doc
                seen.add(draft.kind)
    assert seen == {"qa", MC, TF, CLOZE}


def test_practice_quizzes_only_train_facts_and_no_held_out_stem(world_and_facts, monkeypatch):
    world, facts = world_and_facts
    train = {g: s["train"] for g, s in facts.items()}
    held_keys = {f.key for s in facts.values() for split in ("valid", "test") for f in s[split]}
    held_stems = set()
    for spec in SPECS:
        if spec.make in {m for m, _, _ in PRACTICE_MAKERS}:
            drafts = draft_ability(spec, world, facts, 0)
            held_stems |= {d.stem for split in ("valid", "test") for d in drafts[split]}
    drawn = []
    import doit.data.micro.practice as practice

    original = practice.practice_doc

    def spy(draft, rng, knowledge):
        drawn.append(draft)
        return original(draft, rng, knowledge)

    monkeypatch.setattr(practice, "practice_doc", spy)
    docs = practice_documents(world, train, held_stems, 0, 60_000)
    assert 55_000 <= sum(map(len, docs)) <= 70_000 and len(docs) == len(drawn)
    assert not any(d.share_key in held_keys for d in drawn)
    assert not any(d.stem in held_stems for d in drawn)
    knowledge_keys = {d.share_key for d in drawn if d.share_key and d.share_key[0] in FACT_GROUPS}
    assert len(knowledge_keys) > 300  # many train facts are quizzed, not a handful
