"""The SYNTHETIC micro DoIT corpus: layout, schema per ability, determinism, tokenizer, design.

Tests on the whole corpus use the session fixture ``micro_dir`` (tests/conftest.py),
built once (~10 s on two cores), and are marked slow; the unit tests at the top
build only pieces. The world and the tokenizer have their own test files beside this.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from pathlib import Path

import pytest
from transformers import AutoTokenizer

from doit.data import abilities
from doit.data import kinds as ak
from doit.data.abilities import OOD_KEYS
from doit.data.load import load_items
from doit.data.micro.build import (
    N_RECORDED,
    SPECS,
    build_micro,
    draft_ability,
    fact_cluster,
    held_out_prefix,
    render_ability,
)
from doit.data.micro.drafts import ItemContext
from doit.data.micro.tokenizer import SPEAKER_TOKENS
from doit.data.micro.world import FACT_ATTRS, build_world, split_facts
from doit.io import read_jsonl, sha256_file, sha256_text
from doit.models.chat import prepare_tokenizer
from tests.data.test_formulation import check_agreement

OPTION_LINE = re.compile(r"^([A-F])\. ?\S")  # "A. text"; the 5-shot sets' compact "A.text"
TF_LABELS = ("正确", "错误", "对", "错")
CJK = re.compile(r"^[\u4e00-\u9fff]+$")
BOXED = re.compile(r"\\boxed\{([^{}]+)\}$")
GENERAL = Path("synthetic/40960/general_instruction_gpt4_41k.json")
UNDERSTANDING = abilities.get("understanding")  # the one multi-turn exact-match ability


def records_of(path: Path) -> list[dict]:
    return [record for _, record in read_jsonl(path)]


def split_files(root: Path, key: str) -> dict[str, Path]:
    cur = root / "curated"
    return {
        "full": cur / "full" / f"{key}_full.json",
        "1000": cur / "1000" / f"{key}_1000.json",
        "valid": cur / "valid" / f"{key}_valid.json",
        "test": cur / "test" / f"{key}_test.json",
    }


def options_of(question: str) -> list[str]:
    return [m.group(1) for line in question.split("\n") if (m := OPTION_LINE.match(line))]


def stem_of(record: dict, keep_options: bool = False) -> str:
    """The prompt without option lines: what must differ between splits (multi-select
    questions differ only in their options, so theirs are kept)."""
    text = "\n".join(m["content"] for m in record["messages"][:-1])
    if keep_options:
        return text
    return "\n".join(line for line in text.split("\n") if not OPTION_LINE.match(line))


# --- record checks ---------------------------------------------------------------------
def check_roles(record: dict) -> None:
    roles = [m["role"] for m in record["messages"]]
    assert len(roles) >= 2 and len(roles) % 2 == 0, roles
    assert roles == ["user", "assistant"] * (len(roles) // 2)
    assert all(isinstance(m["content"], str) and m["content"].strip() for m in record["messages"])


def answer_kind(record: dict, ability: abilities.Ability) -> str:
    """The kind a record's gold has, read off the record the way a scorer would."""
    question, gold = record["messages"][-2]["content"], record["messages"][-1]["content"]
    letters = options_of(question)
    if record["question_format"] == 1:
        return ak.OPEN
    if "answer" in record:
        assert BOXED.search(gold).group(1) == record["answer"]
        return ak.MATH
    if ak.MULTISELECT in ability.answer_kinds:
        last = gold.split("\n")[-1]
        assert last == "".join(sorted(set(last))) and set(last) <= set(letters)
        assert 1 <= len(last) <= 3 and letters == list("ABCDEF"[: len(letters)])
        assert 4 <= len(letters) <= 6
        return ak.MULTISELECT
    if letters:
        assert len(gold) == 1 and gold in letters and letters == list("ABCDEF"[: len(letters)])
        return ak.MC
    if gold in TF_LABELS:
        return ak.TF
    assert CJK.match(gold) and "____" in question, (question, gold)
    return ak.CLOZE


def check_record(record: dict, ability: abilities.Ability) -> str:
    check_roles(record)
    assert record["type"] == ability.type_name and isinstance(record["idx"], int)
    kind = answer_kind(record, ability)
    assert kind in ability.answer_kinds, (ability.key, kind)
    assert record["question_format"] == (1 if kind == ak.OPEN else 0)
    if kind == ak.OPEN:
        choices = record["choices"]
        assert len(choices) == 3 and len(set(choices)) == 3
        assert choices[0] == record["messages"][-1]["content"]
    else:
        assert "choices" not in record
    assert ("answer" in record) == (kind == ak.MATH)
    if ability == UNDERSTANDING:
        assert len(record["messages"]) > 2
        assert len(options_of(record["messages"][-2]["content"])) in (3, 4)
    return kind


# --- unit tests (no full build) ----------------------------------------------------------
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.ability.key)
def test_every_generator_yields_valid_records(spec):
    world = build_world(0)
    rng = random.Random(0)
    facts = {g: split_facts(world.facts(g), rng, 0.18) for g in FACT_ATTRS}
    drafts = {
        split: [
            spec.make(ItemContext(world, rng, {g: s[split] for g, s in facts.items()}, split))
            for _ in range(40)
        ]
        for split in ("test", "valid", "train")
    }
    records = render_ability(spec, drafts, seed=0)
    for record in (r for part in records.values() for r in part):
        check_record(record, spec.ability)


def test_draft_ability_keeps_stems_apart_between_splits():
    spec, world = SPECS[0], build_world(0)
    facts = {g: split_facts(world.facts(g), random.Random(0), 0.18) for g in FACT_ATTRS}
    drafts = draft_ability(spec, world, facts, seed=0)
    stems = {split: {d.stem for d in part} for split, part in drafts.items()}
    assert (
        not stems["test"] & stems["valid"] and not (stems["test"] | stems["valid"]) & stems["train"]
    )
    train_facts = {d.share_key for d in drafts["train"]}
    assert not train_facts & {d.share_key for d in drafts["test"]}


def _knowledge_facts(world):
    from doit.data.micro.build import FACT_GROUPS, HELD_OUT_FACTS

    rng = random.Random("micro-split:0")
    return {g: split_facts(world.facts(g), rng, HELD_OUT_FACTS) for g in FACT_GROUPS}


def test_held_out_keeps_test_facts_out_of_every_train_item_and_extends_the_recorded_items():
    world = build_world(0)
    facts = _knowledge_facts(world)
    drafts = {s.ability.key: draft_ability(s, world, facts, seed=0, held_out=160) for s in SPECS}
    train_keys = {d.share_key for by in drafts.values() for d in by["train"]}
    train_stems = {d.stem for by in drafts.values() for d in by["train"]}
    for spec in SPECS:
        key = spec.ability.key
        records = render_ability(spec, drafts[key], seed=0)
        held = held_out_prefix(records, 160)
        assert [len(held[s]) for s in ("test", "valid")] == [160, 160]
        test = drafts[key]["test"]
        assert not {d.share_key for d in test if fact_cluster(d)} & train_keys
        assert not {d.stem for d in test} & train_stems
        clusters = [r.get("cluster") for r in held["test"]]
        if key in ("biology", "history", "chinese"):  # every item asks one held-out fact
            assert all(clusters) and len(set(clusters)) < 160
            assert not set(clusters) & {"/".join(k) for k in train_keys if len(k) == 3}
        else:
            assert not any(clusters)
        idx = [r["idx"] for part in held.values() for r in part]
        assert len(idx) == len(set(idx))
        recorded = render_ability(spec, draft_ability(spec, world, facts, seed=0), seed=0)
        assert held["train"] == recorded["train"]
        assert held["test"][:N_RECORDED] == recorded["test"]
        assert held_out_prefix(recorded, 40)["valid"] == recorded["valid"][:40]


def test_changing_a_lever_of_the_generator_changes_ground_truth_json(tmp_path, monkeypatch):
    """The dose is counted from the items, not typed in: reasoning drawn from two puzzle kinds
    instead of four has a dose of 2, and ground_truth.json says so."""
    from doit.data.micro import in_context
    from doit.data.micro.build import ground_truth
    from doit.io import write_json

    world, spec = build_world(0), next(s for s in SPECS if s.ability.key == "reasoning")
    facts = _knowledge_facts(world)

    def truth_file(name: str) -> Path:
        drafts = {"reasoning": draft_ability(spec, world, facts, seed=0)}
        records = {"reasoning": render_ability(spec, drafts["reasoning"], seed=0)}
        write_json(tmp_path / name, ground_truth(0, drafts, records))
        return tmp_path / name

    before = json.loads(truth_file("before.json").read_text())["abilities"]["reasoning"]
    monkeypatch.setattr(in_context, "PUZZLES", in_context.PUZZLES[:2])  # rule and chain only
    after_path = truth_file("after.json")
    after = json.loads(after_path.read_text())["abilities"]["reasoning"]
    assert before["dose"] == 5 and after["dose"] == 2
    assert after["dose_rules"] == ["chain", "rule"]
    assert after_path.read_bytes() != (tmp_path / "before.json").read_bytes()


def test_build_refuses_a_non_empty_dir(tmp_path):
    (tmp_path / "keep.txt").write_text("x")
    with pytest.raises(FileExistsError, match="empty"):
        build_micro(tmp_path)


# --- the built corpus -----------------------------------------------------------------------
@pytest.mark.slow
def test_layout_and_counts(micro_dir, micro_summary):
    for spec in SPECS:
        files = split_files(micro_dir, spec.ability.key)
        counts = {split: len(records_of(path)) for split, path in files.items()}
        assert counts == {"full": spec.pool_size, "1000": 1000, "valid": 100, "test": 100}
        assert spec.pool_size >= 1000
        full = {json.dumps(r, ensure_ascii=False) for r in records_of(files["full"])}
        assert {json.dumps(r, ensure_ascii=False) for r in records_of(files["1000"])} <= full
    for ood in abilities.OOD:
        assert len(records_of(micro_dir / "curated" / "test" / f"{ood.key}.json")) == 40
    assert len(records_of(micro_dir / GENERAL)) >= 40_960
    for name in ("ground_truth.json", "pretrain/train.txt", "pretrain/valid.txt"):
        assert (micro_dir / name).is_file()
    assert micro_summary["abilities"]["math"]["full"] == 3000


@pytest.mark.slow
def test_schema_per_ability(micro_dir):
    for spec in SPECS:
        kinds = Counter()
        records = [
            r for p in split_files(micro_dir, spec.ability.key).values() for r in records_of(p)
        ]
        for record in records:
            kinds[check_record(record, spec.ability)] += 1
        assert set(kinds) == set(spec.ability.answer_kinds), (spec.ability.key, kinds)
        full_and_held = [
            r
            for p in ("full", "valid", "test")
            for r in records_of(split_files(micro_dir, spec.ability.key)[p])
        ]
        idx = [r["idx"] for r in full_and_held]
        assert len(idx) == len(set(idx))


@pytest.mark.slow
def test_gold_letters_are_balanced(micro_dir):
    for spec in SPECS:
        if ak.MC not in spec.ability.answer_kinds:
            continue
        for split in ("full", "test"):
            by_n = {}
            for r in records_of(split_files(micro_dir, spec.ability.key)[split]):
                letters = options_of(r["messages"][-2]["content"])
                gold = r["messages"][-1]["content"]
                if letters and len(gold) == 1 and "answer" not in r:
                    by_n.setdefault(len(letters), Counter())[gold] += 1
            for n, counts in by_n.items():
                assert len(counts) == n and max(counts.values()) - min(counts.values()) <= 1, counts


@pytest.mark.slow
def test_splits_share_no_question(micro_dir):
    for spec in SPECS:
        files = split_files(micro_dir, spec.ability.key)
        keep = ak.MULTISELECT in spec.ability.answer_kinds
        stems = {
            s: {stem_of(r, keep) for r in records_of(files[s])} for s in ("full", "valid", "test")
        }
        assert not stems["full"] & stems["valid"]
        assert not stems["full"] & stems["test"]
        assert not stems["valid"] & stems["test"]


@pytest.mark.slow
def test_ood_sets_are_five_shot(micro_dir):
    in_domain_questions = {
        stem_of(r)
        for spec in SPECS
        for p in split_files(micro_dir, spec.ability.key).values()
        for r in records_of(p)
    }
    for ood in abilities.OOD:
        for record in records_of(micro_dir / "curated" / "test" / f"{ood.key}.json"):
            check_roles(record)
            assert len(record["messages"]) == 12 and record["question_format"] == 0
            assert record["type"] == ood.type_name
            for user, gold in zip(record["messages"][::2], record["messages"][1::2], strict=True):
                assert options_of(user["content"]) == list("ABCD")
                assert gold["content"] in "ABCD" and len(gold["content"]) == 1
            assert stem_of(record) not in in_domain_questions


@pytest.mark.slow
def test_general_instructions_are_messages_only_free_chat(micro_dir):
    for record in records_of(micro_dir / GENERAL):
        assert set(record) == {"messages"}
        check_roles(record)
        for message in record["messages"]:
            assert not options_of(message["content"]) and "\\boxed" not in message["content"]


def build_hashes(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): sha256_file(p)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.slow
def test_same_seed_same_bytes_other_seed_differs(micro_dir, tmp_path):
    (tmp_path / "again").mkdir()
    (tmp_path / "other").mkdir()
    build_micro(tmp_path / "again", seed=0, held_out=N_RECORDED)
    build_micro(tmp_path / "other", seed=1, held_out=N_RECORDED)
    reference = build_hashes(micro_dir)
    assert build_hashes(tmp_path / "again") == reference
    other = build_hashes(tmp_path / "other")
    assert other.keys() == reference.keys()
    same = {name for name in reference if other[name] == reference[name]}
    assert same == {"tokenizer/tokenizer_config.json"}  # settings only; the vocab differs


# sha256 over "<path> <sha256>" lines of every seed-0 file outside tokenizer/ (whose bytes
# also depend on the tokenizers version), as the generator writes them now (math in 1-3 small
# steps, 5-shot prompts that fit 256 positions), at the recorded 100 held-out items per split,
# with each held-out knowledge item's `cluster` and ground_truth.json's levers (issue #30).
SEED_0_RECORDS_DIGEST = "792c46d40ef6d24cf9e89d2e4617896dbba952121449f7822806ffd8ad1149a2"
# The pretraining text the recorded ladder (studies/value_residual_micro_ladder) and the micro
# study's bases were trained on: unchanged when those items were last rewritten.
PRETRAIN_SHA256 = {
    "pretrain/train.txt": "0f1c2ac365bff42e8a48df3fcab56d7a7a18540e1830582ef2ed608da55022ff",
    "pretrain/valid.txt": "de65e6fade438d3f2e4bf59980adc4685e21c8604533408afeb881e3d47787d7",
}


@pytest.mark.slow
def test_seed_0_corpus_is_the_recorded_one_and_its_pretraining_text_the_ladders(micro_dir):
    """A change to the generator changes this digest on purpose, never by accident; the
    pretraining text must stay the ladder's, or the ladder is re-recorded."""
    hashes = build_hashes(micro_dir)
    listing = "".join(
        f"{name} {h}\n" for name, h in hashes.items() if name.split("/")[0] != "tokenizer"
    )
    assert sha256_text(listing) == SEED_0_RECORDS_DIGEST
    assert {name: hashes[name] for name in PRETRAIN_SHA256} == PRETRAIN_SHA256


@pytest.mark.slow
def test_tokenizer_vocab_and_item_lengths(micro_dir):
    tok = AutoTokenizer.from_pretrained(micro_dir / "tokenizer")
    assert len(tok) <= 4096 and tok.model_max_length == 512 and tok.bos_token is None
    assert tok.pad_token == "<pad>" and tok.eos_token == "</s>"
    assert all(len(tok(t, add_special_tokens=False)["input_ids"]) == 1 for t in SPEAKER_TOKENS)
    for spec in SPECS:
        records = records_of(split_files(micro_dir, spec.ability.key)["full"])
        lengths = [
            sum(
                len(tok(m["content"], add_special_tokens=False)["input_ids"]) + 2
                for m in r["messages"]
            )
            for r in records
        ]
        if ak.MATH in spec.ability.answer_kinds:
            assert max(lengths) < 200
        else:
            assert sum(n < 100 for n in lengths) / len(lengths) >= 0.9, spec.ability.key


@pytest.mark.slow
def test_every_character_is_in_the_prose_and_one_token(micro_dir):
    prose = set((micro_dir / "pretrain" / "train.txt").read_text(encoding="utf-8"))
    used = set()
    for path in sorted((micro_dir / "curated").rglob("*.json")) + [micro_dir / GENERAL]:
        used |= set(path.read_text(encoding="utf-8"))
    cjk = sorted(c for c in used if "\u4e00" <= c <= "\u9fff")
    assert not set(cjk) - prose
    assert len(cjk) < 1000  # a small character set
    tok = AutoTokenizer.from_pretrained(micro_dir / "tokenizer")
    assert all(len(ids) == 1 for ids in tok(cjk, add_special_tokens=False)["input_ids"])


@pytest.mark.slow
def test_pretrain_size_and_no_question_in_prose(micro_dir, micro_summary):
    train = (micro_dir / "pretrain" / "train.txt").read_text(encoding="utf-8")
    valid = (micro_dir / "pretrain" / "valid.txt").read_text(encoding="utf-8")
    tok = AutoTokenizer.from_pretrained(micro_dir / "tokenizer")
    lines = train.splitlines()
    n_tokens = sum(len(ids) for ids in tok(lines, add_special_tokens=False)["input_ids"])
    assert n_tokens >= 1_000_000 and n_tokens == micro_summary["pretrain"]["train_tokens"]
    assert 0.02 <= len(valid) / len(train) <= 0.05
    prose = train + valid
    for path in sorted((micro_dir / "curated").glob("[vt]*/*.json")):
        for record in records_of(path):
            stem = stem_of(record)
            sentences = [s for line in stem.split("\n") for s in line.split("。") if len(s) >= 6]
            assert stem not in prose and not any(s + "。" in prose for s in sentences), stem


@pytest.mark.slow
def test_ground_truth_matches_the_design(micro_dir):
    truth = json.loads((micro_dir / "ground_truth.json").read_text(encoding="utf-8"))
    assert truth["synthetic"] is True and truth["seed"] == 0
    table = truth["abilities"]
    assert tuple(table) == abilities.ABILITY_KEYS
    fields = {
        "needs_pretrained_facts",
        "recall_fraction",
        "steps",
        "learnable",
        "expected_plateau",
        "saturates_at",
        "shared_fraction",
        "shares_with",
        "notes",
        "expected_plateau_text",
        "dose",
        "dose_rules",
        "train_items_per_rule",
        "held_out_items",
        "test_clusters",
    }
    for key, row in table.items():
        assert fields <= set(row)
        assert 0.0 <= row["shared_fraction"] <= 1.0
        assert (row["shared_fraction"] > 0) == bool(row["shares_with"])
        assert all(key in table[other]["shares_with"] for other in row["shares_with"])
        assert (row["expected_plateau"] is None) == row["learnable"]
        assert row["dose"] == len(row["dose_rules"]) >= 1 and row["held_out_items"] == 100
        assert (row["test_clusters"] > 0) == (key in ("biology", "history", "chinese"))
    pairs = {key: set(row["shares_with"]) for key, row in table.items()}
    sharing = {k for k, v in pairs.items() if v}
    assert len(sharing) == 4  # history-chinese and reasoning-understanding, the rest isolated
    assert sum(row["learnable"] is False for row in table.values()) == 2
    assert sum(row["saturates_at"] is not None for row in table.values()) == 1
    recall = {k for k, row in table.items() if row["needs_pretrained_facts"]}
    assert recall == {"biology", "history", "chinese", "ethics"}
    # the dose lever: distinct answer rules of the train items, spread >= 8x over the learnable
    doses = {k: row["dose"] for k, row in table.items() if row["learnable"]}
    assert max(doses.values()) >= 8 * min(doses.values()) and doses["creative_writing"] == 1
    # the hand-typed intentions are gone from new corpora, and the file says what replaced them
    assert not any({"planted_data_rank", "planted_group"} & set(row) for row in table.values())
    assert "planted_data_rank" in truth["superseded"]
    # the text formulation ranks only sets of the gold's size: a higher ethics plateau
    assert table["ethics"]["expected_plateau_text"] > table["ethics"]["expected_plateau"]
    assert table["role_play"]["expected_plateau_text"] == table["role_play"]["expected_plateau"]
    assert table["math"]["steps"] == [1, 3]


@pytest.mark.slow
def test_ground_truth_per_formulation_has_floor_ceiling_and_the_ranked_share(micro_dir):
    truth = json.loads((micro_dir / "ground_truth.json").read_text(encoding="utf-8"))
    table, by = truth["abilities"], truth["formulations"]
    assert set(by) == set(ak.FORMULATIONS)
    for formulation, rows in by.items():
        test = load_items(micro_dir, "test")
        for key, row in rows.items():
            items = [ak.formulate(x, formulation) for x in test if x["ability"] == key]
            floor = 100 * sum(x["chance"] for x in items) / len(items)
            assert row["floor"] == pytest.approx(floor, abs=0.005)
            plateau = table[key]["expected_plateau" + ("_text" if formulation == "text" else "")]
            top = 100.0 if plateau is None else 100 * plateau
            assert row["ceiling"] == pytest.approx(top, abs=0.005)
    assert by["letter"]["chinese"]["ranked_fraction"] == 0.0  # letters and spans: generated
    assert 0.3 < by["text"]["chinese"]["ranked_fraction"] < 0.7  # ranked MC, generated cloze
    assert by["text"]["role_play"]["ceiling"] == 50.0 and by["text"]["math"]["floor"] == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("formulation", ["letter", "text"])
def test_every_ood_prompt_fits_the_micro_context_with_room_for_the_answer(micro_dir, formulation):
    """A 5-shot prompt and its answer fit the micro bases' 256 positions, with 16 tokens to
    spare for a letter's generation budget (teacher qualification once had none)."""
    tok = AutoTokenizer.from_pretrained(micro_dir / "tokenizer")
    prepare_tokenizer(tok)
    test = load_items(micro_dir, "test")
    for it in (ak.formulate(x, formulation) for x in test if x["ability"] in OOD_KEYS):
        prompt = tok.apply_chat_template(
            it["messages"][:-1], tokenize=False, add_generation_prompt=True
        )
        answers = it["choices"] or [it["messages"][-1]["content"]]
        longest = max(
            len(
                tok(
                    tok.apply_chat_template(
                        it["messages"][:-1] + [{"role": "assistant", "content": a}], tokenize=False
                    ),
                    add_special_tokens=False,
                )["input_ids"]
            )
            for a in answers
        )
        assert len(tok(prompt, add_special_tokens=False)["input_ids"]) <= 240 and longest <= 256


@pytest.mark.slow
def test_every_micro_item_agrees_on_the_gold_in_both_formulations(micro_dir):
    for split in ("train", "valid", "test"):
        for it in load_items(micro_dir, split):
            check_agreement(it)
