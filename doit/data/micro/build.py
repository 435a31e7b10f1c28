"""Build the *micro DoIT* corpus: a SYNTHETIC Chinese corpus in the real DoIT layout.

    from doit.data.micro import build_micro
    summary = build_micro(Path("out"), seed=0)   # out/ must exist and be empty

writes ``curated/{full,1000,valid,test}``, the three C-Eval-style OOD sets,
``synthetic/40960/general_instruction_gpt4_41k.json``, ``pretrain/{train,valid}.txt``,
a trained ``tokenizer/`` and ``ground_truth.json`` (the properties planted in each
ability, measured on the items actually generated). Same seed, same bytes, on any
machine: every random choice comes from a ``random.Random`` seeded by a string.
See ``doit/data/micro/README.md`` for the world and each ability's design lever.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from doit.data import abilities
from doit.data import kinds as ak
from doit.data.micro.chat import general_instructions
from doit.data.micro.drafts import Draft, ItemContext, option_lines, render_mc
from doit.data.micro.ethics import ethics
from doit.data.micro.in_context import reasoning, understanding
from doit.data.micro.knowledge import biology, chinese, history
from doit.data.micro.ood import ood_sets
from doit.data.micro.open_ended import creative_writing, role_play
from doit.data.micro.practice import practice_documents
from doit.data.micro.procedural import code, math
from doit.data.micro.prose import pretrain_documents
from doit.data.micro.tokenizer import train_tokenizer
from doit.data.micro.world import FACT_ATTRS, SPLITS, World, build_world, split_facts
from doit.data.schema import parse_record
from doit.io import atomic_write_text, write_json, write_jsonl

N_HELD_OUT = 400  # valid and test items per ability (--held-out; the README measures it)
N_RECORDED = 100  # the held-out items per split of the corpora the recorded studies scored
SUBSET_SIZE = 1000
N_GENERAL = 41_000  # general-instruction records (>= 40,960)
PRETRAIN_CHARS = 1_100_000  # train prose, whole rounds: >= 1M tokens (one per character)
PRETRAIN_VALID_FRACTION = 0.03
FACT_GROUPS = ("species", "dynasty", "figure", "idiom", "poet")  # asked by in-domain abilities
HELD_OUT_FACTS = 0.18  # fraction of each group's facts held out for test, and again for valid
GENERAL_PATH = Path("synthetic/40960/general_instruction_gpt4_41k.json")


@dataclass(frozen=True)
class AbilitySpec:
    ability: abilities.Ability
    make: Callable[[ItemContext], Draft]
    pool_size: int  # train items in curated/full
    saturates_at: int | None  # train items after which the score should stop rising
    notes: str


SPECS = (
    AbilitySpec(
        abilities.get("biology"),
        biology,
        1042,
        None,
        "Knowledge recall: one attribute of a species, stated only in the pretraining "
        "prose; test/valid facts are never asked in any train item.",
    ),
    AbilitySpec(
        abilities.get("history"),
        history,
        1200,
        None,
        "Knowledge recall on dynasties and historical figures, multiple choice and "
        "true/false; the dynasty founder/capital/successor facts are shared with chinese.",
    ),
    AbilitySpec(
        abilities.get("code"),
        code,
        2000,
        None,
        "A described computation of 1-3 operations to a one-line Python function; the "
        "fine distractor flips one operator, the coarse one is an unrelated program.",
    ),
    AbilitySpec(
        abilities.get("creative_writing"),
        creative_writing,
        1000,
        64,
        "One fixed three-line pattern (title opens every line, fixed refrain); the fine "
        "distractor breaks it once, so a few dozen examples teach it fully.",
    ),
    AbilitySpec(
        abilities.get("chinese"),
        chinese,
        1150,
        None,
        "Idioms and poets (multiple choice and cloze) plus cloze items on the dynasty "
        "facts history also asks (transference).",
    ),
    AbilitySpec(
        abilities.get("understanding"),
        understanding,
        2000,
        None,
        "Multi-turn dialogue, 3-4 options; everything needed is in the dialogue. Its "
        "rule items use the same sentence format as reasoning's rule puzzles.",
    ),
    AbilitySpec(
        abilities.get("role_play"),
        role_play,
        1000,
        None,
        "In-character answer to a preference question; the fine distractor swaps the "
        "preference for another the world never settles, so ranking stays a coin flip.",
    ),
    AbilitySpec(
        abilities.get("reasoning"),
        reasoning,
        3000,
        None,
        "Premises and rules in the prompt (rule, chain, ordering, contrapositive); "
        "the rule format is shared with understanding.",
    ),
    AbilitySpec(
        abilities.get("math"),
        math,
        3000,
        None,
        "Word problems chaining 1-3 small arithmetic relations (mostly one or two), "
        "worked solution ending in \\boxed{}; grows slowly.",
    ),
    AbilitySpec(
        abilities.get("ethics"),
        ethics,
        1000,
        None,
        "Multi-select: deeds the prose calls wrong are never gold (learnable), but which "
        "of the listed customs count as proper is a coin flip per item (plateau).",
    ),
)
_SPEC_BY_KEY = {spec.ability.key: spec for spec in SPECS}


# --- drafting -----------------------------------------------------------------------------
def _draft_split(spec, ctx: ItemContext, count: int, identities: set, taken_stems: set) -> list:
    drafts: list[Draft] = []
    for _ in range(count * 200):
        if len(drafts) == count:
            return drafts
        draft = spec.make(ctx)
        if draft.identity in identities or draft.stem in taken_stems:
            continue
        identities.add(draft.identity)
        drafts.append(draft)
    if len(drafts) == count:
        return drafts
    raise RuntimeError(
        f"{spec.ability.key}: only {len(drafts)} distinct {ctx.split} items of {count} could be "
        "drawn; add templates or facts, or lower the pool size (or --held-out)"
    )


def draft_ability(
    spec: AbilitySpec, world: World, facts: dict, seed: int, held_out: int = N_RECORDED
) -> dict[str, list]:
    """Drafts per split (test, valid, train); no stem is shared between splits.

    The first ``N_RECORDED`` valid and test drafts and every train draft are drawn as they
    always were, so train items never change with ``held_out``. Past them, up to ``held_out``,
    come drafts of their own random stream that ask the same held-out facts again (other
    templates, other distractors; they share a ``cluster``). A smaller ``held_out`` keeps the
    first ``held_out`` of each split (``held_out_prefix``); the drafts returned always hold
    the first ``N_RECORDED``, which the gold letters and idx are placed over."""
    if held_out < 1:
        raise ValueError(
            f"held_out: expected >= 1 valid and test items per ability, got {held_out}"
        )
    rng = random.Random(f"micro-items:{seed}:{spec.ability.key}")
    sizes = {"test": N_RECORDED, "valid": N_RECORDED, "train": spec.pool_size}
    drafts: dict[str, list[Draft]] = {}
    identities: set = set()
    for split in SPLITS:
        ctx = ItemContext(world, rng, {g: by_split[split] for g, by_split in facts.items()}, split)
        taken = {d.stem for done in drafts.values() for d in done}
        drafts[split] = _draft_split(spec, ctx, sizes[split], identities, taken)
    more = random.Random(f"micro-items-more:{seed}:{spec.ability.key}")
    for split in ("test", "valid") if held_out > N_RECORDED else ():
        ctx = ItemContext(world, more, {g: by[split] for g, by in facts.items()}, split)
        taken = {d.stem for other, done in drafts.items() if other != split for d in done}
        drafts[split] += _draft_split(spec, ctx, held_out - N_RECORDED, identities, taken)
    return drafts


def held_out_prefix(by_split: dict[str, list], held_out: int) -> dict[str, list]:
    """The first ``held_out`` valid and test entries (drafts or records), train unchanged."""
    return {s: part if s == "train" else part[:held_out] for s, part in by_split.items()}


# --- rendering ------------------------------------------------------------------------------
def _gold_positions(drafts: list[Draft], rng: random.Random) -> list[int]:
    """Balanced gold positions: for each option count, every letter equally often (+-1)."""
    positions = [0] * len(drafts)
    for n in sorted({len(d.options) for d in drafts if d.kind == ak.MC}):
        slots = [i for i, d in enumerate(drafts) if d.kind == ak.MC and len(d.options) == n]
        letters = [i % n for i in range(len(slots))]
        rng.shuffle(letters)
        for slot, pos in zip(slots, letters, strict=True):
            positions[slot] = pos
    return positions


def _final_turn(draft: Draft, pos: int) -> tuple[str, str]:
    if draft.kind == ak.MC:
        return render_mc(draft, pos)
    if draft.kind == ak.MULTISELECT:
        return draft.question + "\n" + option_lines(draft.options), draft.gold
    return draft.question, draft.gold


def render(draft: Draft, pos: int, idx: int, type_name: str, held_out: bool = False) -> dict:
    """The record of ``draft``; a ``held_out`` (valid/test) item that asks a fact of the world
    carries its ``cluster``: the fact (``group/subject/attribute``), shared by every held-out
    item of the ability that asks it."""
    contents = [*draft.turns, *_final_turn(draft, pos)]
    roles = ("user", "assistant")
    messages = [{"role": roles[i % 2], "content": c} for i, c in enumerate(contents)]
    record = {"messages": messages, "idx": idx, "type": type_name}
    record["question_format"] = 1 if draft.kind == ak.OPEN else 0
    if draft.kind == ak.OPEN:
        record["choices"] = list(draft.choices)
    if draft.kind == ak.MATH:
        record["answer"] = draft.answer
    if held_out and fact_cluster(draft):
        record["cluster"] = fact_cluster(draft)
    return record


def fact_cluster(draft: Draft) -> str | None:
    """The fact a draft asks, as a cluster id (``species/斑啾/colour``); None for items that
    ask none (in-context, procedural, open-ended, ethics)."""
    key = draft.share_key
    is_fact = len(key) == 3 and key[0] in FACT_ATTRS
    return "/".join(key) if is_fact else None


def render_ability(spec: AbilitySpec, drafts: dict[str, list], seed: int) -> dict[str, list]:
    """Records per split. idx runs over train, the first ``N_RECORDED`` valid, the first
    ``N_RECORDED`` test, then the further valid and test items; gold letters are balanced
    within the first ``N_RECORDED`` of a split and within the rest, each from its own stream,
    so the first ``N_RECORDED`` records are those of a corpus built without more."""
    rng = random.Random(f"micro-letters:{seed}:{spec.ability.key}")
    more = random.Random(f"micro-letters-more:{seed}:{spec.ability.key}")
    blocks = [("train", rng, 0, None), ("valid", rng, 0, N_RECORDED), ("test", rng, 0, N_RECORDED)]
    blocks += [("valid", more, N_RECORDED, None), ("test", more, N_RECORDED, None)]
    records, idx = {"train": [], "valid": [], "test": []}, 0
    for split, stream, start, stop in blocks:
        part = drafts[split][start:stop]
        positions = _gold_positions(part, stream)
        records[split] += [
            render(d, pos, idx + i, spec.ability.type_name, split != "train")
            for i, (d, pos) in enumerate(zip(part, positions, strict=True))
        ]
        idx += len(part)
    return records


# --- ground truth ------------------------------------------------------------------------------
def _chance(draft: Draft) -> float:
    """The chance its kind's rule gives the item a draft becomes (as ``doit.data.schema``)."""
    fields = {"options": draft.options, "gold": draft.gold, "choices": draft.choices}
    return ak.kind(draft.kind).chance(fields)


def _steps(drafts: list[Draft]) -> int | list[int]:
    lo, hi = min(d.steps for d in drafts), max(d.steps for d in drafts)
    return lo if lo == hi else [lo, hi]


def _share_keys(drafts: dict[str, list[Draft]]) -> set:
    return {d.share_key for split in drafts.values() for d in split}


def _formulation_truth(records: list[dict], key: str, formulation: str, plateau) -> dict:
    """The floor and ceiling (points, 0-100, as scores) of an ability's test items asked in
    ``formulation``, and the share of them scored by ranking texts (the rest generated):
    each item parsed as ``doit.data.schema`` parses it and rewritten by ``kinds.formulate``."""
    items = []
    for line, record in enumerate(records, 1):
        item, _ = parse_record(record, path=f"{key}_test.json", line=line, hint=key)
        items.append(ak.formulate(item, formulation))
    return {
        "floor": round(100 * statistics.fmean(it["chance"] for it in items), 2),
        "ceiling": 100.0 if plateau is None else round(100 * plateau, 2),
        "ranked_fraction": round(
            statistics.fmean(not ak.kind(it["answer_kind"]).generated for it in items), 4
        ),
    }


def _plateau(test: list[Draft], text: bool) -> float | None:
    """The mean best achievable score of coin-flip items (None for a learnable ability)."""
    if all(d.plateau is None for d in test):
        return None
    values = [d.plateau_text if text and d.plateau_text is not None else d.plateau for d in test]
    return round(statistics.fmean(1.0 if v is None else v for v in values), 4)


def ability_truth(spec: AbilitySpec, drafts: dict, keys: dict[str, set]) -> dict:
    """The levers the generator set in ``spec``'s drafts (all splits; the dose over train)."""
    key = spec.ability.key
    items = [d for split in drafts[key].values() for d in split]
    others = set().union(*(k for other, k in keys.items() if other != key))
    test, train = drafts[key]["test"], drafts[key]["train"]
    rules = sorted({rule for d in train for rule in d.rules})
    recall = statistics.fmean(d.recall for d in items)
    return {
        "needs_pretrained_facts": recall >= 0.5,
        "recall_fraction": round(recall, 4),
        "steps": _steps(items),
        "learnable": all(d.plateau is None for d in items),
        "expected_plateau": _plateau(test, text=False),
        "saturates_at": spec.saturates_at,
        "shared_fraction": round(statistics.fmean(d.share_key in others for d in items), 4),
        "shares_with": [
            o for o in abilities.ABILITY_KEYS if o != key and keys[key] & keys.get(o, set())
        ],
        "chance": round(statistics.fmean(_chance(d) for d in test), 4),
        "notes": spec.notes,
        "expected_plateau_text": _plateau(test, text=True),
        "dose": len(rules),
        "dose_rules": ["/".join(rule) for rule in rules],
        "train_items_per_rule": round(len(train) / max(len(rules), 1), 1),
        "held_out_items": len(test),
        "test_clusters": len({fact_cluster(d) for d in test if fact_cluster(d)}),
    }


SUPERSEDED = (
    "planted_data_rank and planted_group (hand-typed intentions, in corpora built before the "
    "levers) are superseded: read dose, needs_pretrained_facts, learnable and formulations "
    "(doit/data/micro/README.md)"
)


def ground_truth(seed: int, drafts: dict[str, dict], records: dict[str, dict]) -> dict:
    """ground_truth.json: per ability the levers (``ability_truth``), and per formulation each
    ability's floor, ceiling and ranked share over its test items (``_formulation_truth``)."""
    keys = {key: _share_keys(by_split) for key, by_split in drafts.items()}
    truth = {key: ability_truth(_SPEC_BY_KEY[key], drafts, keys) for key in drafts}
    formulations = {
        f: {
            key: _formulation_truth(
                records[key]["test"], key, f, _plateau(drafts[key]["test"], f == ak.TEXT)
            )
            for key in drafts
        }
        for f in ak.FORMULATIONS
    }
    return {
        "seed": seed,
        "synthetic": True,
        "abilities": truth,
        "formulations": formulations,
        "superseded": SUPERSEDED,
    }


# --- writing -------------------------------------------------------------------------------------
def _write_curated(out_dir: Path, key: str, records: dict[str, list], seed: int) -> None:
    curated = out_dir / "curated"
    full = records["train"]
    rng = random.Random(f"micro-subset:{seed}:{key}")
    subset = [full[i] for i in sorted(rng.sample(range(len(full)), SUBSET_SIZE))]
    write_jsonl(curated / "full" / f"{key}_full.json", full)
    write_jsonl(curated / str(SUBSET_SIZE) / f"{key}_{SUBSET_SIZE}.json", subset)
    write_jsonl(curated / "valid" / f"{key}_valid.json", records["valid"])
    write_jsonl(curated / "test" / f"{key}_test.json", records["test"])


def _write_pretrain(
    out_dir: Path, world: World, seed: int, practice: list[str]
) -> dict[str, list[str]]:
    """train.txt: the prose with the practice documents shuffled in; valid.txt: prose only."""
    prose = pretrain_documents(world, random.Random(f"micro-prose:{seed}:train"), PRETRAIN_CHARS)
    train = prose + practice
    if practice:
        random.Random(f"micro-prose:{seed}:mix").shuffle(train)
    n_valid = int(sum(map(len, prose)) * PRETRAIN_VALID_FRACTION)
    rng = random.Random(f"micro-prose:{seed}:valid")
    valid = pretrain_documents(world, rng, n_valid, whole_rounds=False)
    docs = {"train": train, "valid": valid}
    for split, lines in docs.items():
        atomic_write_text(out_dir / "pretrain" / f"{split}.txt", "\n".join(lines) + "\n")
    return docs


def _practice(world: World, facts: dict, drafts: dict, seed: int, fraction: float) -> list[str]:
    if not fraction:
        return []
    held_out = {
        d.stem for by_split in drafts.values() for s in ("valid", "test") for d in by_split[s]
    }
    train_facts = {g: by_split["train"] for g, by_split in facts.items()}
    return practice_documents(world, train_facts, held_out, seed, int(PRETRAIN_CHARS * fraction))


def _token_stats(tokenizer, records: list[dict]) -> dict[str, float]:
    """Item length in tokens: content tokens plus a speaker and an <eot> token per message."""
    contents = [m["content"] for r in records for m in r["messages"]]
    lengths = iter(len(e.ids) for e in tokenizer.backend_tokenizer.encode_batch(contents, False))
    per_item = sorted(sum(next(lengths) + 2 for _ in r["messages"]) for r in records)
    p95 = per_item[min(len(per_item) - 1, int(0.95 * len(per_item)))]
    return {"mean": round(statistics.fmean(per_item), 1), "p95": p95, "max": per_item[-1]}


def _count_tokens(tokenizer, lines: list[str]) -> int:
    return sum(len(e.ids) for e in tokenizer.backend_tokenizer.encode_batch(lines, False))


def build_micro(
    out_dir: Path, seed: int = 0, practice_fraction: float = 0.0, held_out: int = N_HELD_OUT
) -> dict:
    """Write the whole micro corpus into ``out_dir`` (existing, empty); return a summary.

    ``practice_fraction``: exam practice (``practice.py``) added to the pretraining text,
    as a fraction of the prose's characters. The default, 0, is the shipped world: prose
    only (``studies/micro_study/README.md`` says why: at the demo bases' size it did not help).
    ``held_out``: valid and test items per ability (``draft_ability``); the pretraining text
    and the train items are the same whatever it is."""
    if practice_fraction < 0:
        raise ValueError(f"practice_fraction: expected >= 0, got {practice_fraction}")
    out_dir = Path(out_dir)
    if not out_dir.is_dir() or any(out_dir.iterdir()):
        raise FileExistsError(f"{out_dir} must be an existing empty directory")
    world = build_world(seed)
    split_rng = random.Random(f"micro-split:{seed}")
    facts = {g: split_facts(world.facts(g), split_rng, HELD_OUT_FACTS) for g in FACT_GROUPS}
    drafts, records = {}, {}
    for ability in abilities.ABILITIES:
        spec = _SPEC_BY_KEY[ability.key]
        drawn = draft_ability(spec, world, facts, seed, held_out)
        drafts[ability.key] = held_out_prefix(drawn, held_out)
        records[ability.key] = held_out_prefix(render_ability(spec, drawn, seed), held_out)
        _write_curated(out_dir, ability.key, records[ability.key], seed)
    ood = ood_sets(world, seed)
    for key, ood_records in ood.items():
        write_jsonl(out_dir / "curated" / "test" / f"{key}.json", ood_records)
    general = general_instructions(world, seed, N_GENERAL)
    write_jsonl(out_dir / GENERAL_PATH, general)
    practice = _practice(world, facts, drafts, seed, practice_fraction)
    docs = _write_pretrain(out_dir, world, seed, practice)
    tokenizer = train_tokenizer([out_dir / "pretrain" / "train.txt"], out_dir / "tokenizer")
    write_json(out_dir / "ground_truth.json", ground_truth(seed, drafts, records))
    return _summary(seed, records, ood, general, docs, tokenizer, len(practice))


def _summary(seed, records, ood, general, docs, tokenizer, n_practice) -> dict:
    counts = {
        key: {
            "full": len(r["train"]),
            str(SUBSET_SIZE): SUBSET_SIZE,
            "valid": len(r["valid"]),
            "test": len(r["test"]),
        }
        for key, r in records.items()
    }
    pretrain = {}
    for split, lines in docs.items():
        pretrain[f"{split}_docs"] = len(lines)
        pretrain[f"{split}_chars"] = sum(map(len, lines))
        pretrain[f"{split}_tokens"] = _count_tokens(tokenizer, lines)
    if n_practice:
        pretrain["train_practice_docs"] = n_practice
    item_tokens = {
        key: _token_stats(tokenizer, [x for s in r.values() for x in s])
        for key, r in records.items()
    }
    text = "".join(docs["train"]) + "".join(
        m["content"] for r in records.values() for s in r.values() for x in s for m in x["messages"]
    )
    return {
        "seed": seed,
        "synthetic": True,
        "abilities": counts,
        "ood": {key: len(v) for key, v in ood.items()},
        "general_instruction": len(general),
        "pretrain": pretrain,
        "vocab_size": len(tokenizer),
        "distinct_chinese_chars": len({c for c in text if "\u4e00" <= c <= "\u9fff"}),
        "item_tokens": item_tokens,
    }
