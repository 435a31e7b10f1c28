"""Exam practice in the micro pretraining text: train-split facts only, answers correct."""

from __future__ import annotations

import random
import re

import pytest

from doit.data.kinds import CLOZE, MC, TF
from doit.data.micro.build import FACT_GROUPS, HELD_OUT_FACTS, SPECS, draft_ability
from doit.data.micro.drafts import OPTION_FORMATS, ItemContext
from doit.data.micro.knowledge import HISTORY_TF, TF_WRAPPERS
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


WRAPPERS = {wrapper.split("\n")[0] for wrapper, _, _ in TF_WRAPPERS}
QUIZ_MARKS = ("答案", "答：", "应该选")


def gold_of(quiz: str) -> str | None:
    """The answer a quiz line gives: its option text for a letter, else the text itself."""
    answer = TEXT_ANSWER.search(quiz)
    if answer is None:
        return None
    return dict(INLINE_OPTION.findall(quiz)).get(answer.group(1), answer.group(1))


def states(quiz: str, fact) -> bool:
    """Whether ``quiz`` gives ``fact`` away: asks about one end and answers with the other, or
    holds its true/false statement."""
    value = OPTION_FORMATS.get((fact.group, fact.attr), "{}").format(fact.value)
    if fact.group in ("dynasty", "figure"):
        statement = HISTORY_TF[fact.attr].format(name=fact.subject, v=fact.value)
        if statement in quiz:
            return True
    first_option = INLINE_OPTION.search(quiz)
    question = quiz[: first_option.start()] if first_option else quiz
    gold = gold_of(quiz)
    return (gold == value and fact.subject in question) or (
        gold == fact.subject and value in question
    )


@pytest.mark.slow
def test_a_built_practice_corpus_never_quizzes_a_held_out_fact(
    tmp_path, world_and_facts, micro_dir
):
    """On the written corpus: no quiz line gives a held-out fact away, no valid/test knowledge
    question appears in train.txt, and valid.txt stays prose only."""
    from doit.data.micro.build import build_micro
    from doit.io import read_jsonl

    summary = build_micro(tmp_path, seed=0, practice_fraction=0.3)
    world, facts = world_and_facts
    lines = (tmp_path / "pretrain" / "train.txt").read_text(encoding="utf-8").splitlines()
    quizzes = [line for line in lines if any(m in line for m in QUIZ_MARKS)]
    assert len(quizzes) >= summary["pretrain"]["train_practice_docs"] > 1000
    held = [f for s in facts.values() for split in ("valid", "test") for f in s[split]]
    f = next(f for f in held if (f.group, f.attr) == ("dynasty", "capital"))  # a leak is caught
    assert states(f"问：{f.subject}的都城是哪座城？答：{f.value}。", f)
    assert states(HISTORY_TF[f.attr].format(name=f.subject, v=f.value) + " 答案：对", f)
    # every way ``states`` gives a fact away puts its subject in the quiz line (the question,
    # the gold or the statement), so only those pairs are checked: the same leaks, 70x faster
    leaks = [(f, q) for q in quizzes for f in held if f.subject in q and states(q, f)]
    assert not leaks, leaks[:3]
    text = "\n".join(lines)
    for ability in ("biology", "history", "chinese"):
        for split in ("valid", "test"):
            path = tmp_path / "curated" / split / f"{ability}_{split}.json"
            for _, record in read_jsonl(path):
                prompt = record["messages"][-2]["content"].split("\n")
                for line in prompt:  # the question or the true/false statement, not option lines
                    if line not in WRAPPERS and not INLINE_OPTION.match(line):
                        assert line not in text, line
    valid = (tmp_path / "pretrain" / "valid.txt").read_text(encoding="utf-8")
    assert valid == (micro_dir / "pretrain" / "valid.txt").read_text(encoding="utf-8")  # prose only
