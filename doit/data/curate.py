"""Cleaning a user's own corpus: normalise, deduplicate, filter by length, decontaminate.

``curate(records, against=valid_and_test_records, tokenizer=tok)`` runs five stages in
order and says, for every item it drops, why and what it duplicates:

1. normalisation (``normalize_text``): NFC, full-width letters/digits/space to ASCII,
   zero-width and control characters removed, runs of spaces collapsed, blank lines
   squeezed, ends stripped. Chinese full-width punctuation (，。！？：；、「」《》（）…) is
   kept as it is: NFKC would turn ，into , and is therefore not used. Leading indentation
   is kept, and text inside ``` fences keeps its inner spacing, so code still runs.
2. exact dedup (``exact_dedup``): sha256 of every turn's role and normalised content,
   compared with whitespace runs read as one space and spaces beside CJK characters
   ignored (``content_key``); the first copy is kept.
3. near dedup (``near_dedup``): MinHash over character n-gram shingles (Chinese has no
   spaces, so words are not a usable unit), banded LSH for candidates, exact check.
4. length filter (``length_filter``): only when a tokenizer is given.
5. contamination (``contamination``): drops train items whose question (the user
   turns) equals, or nearly equals, the question of any ``against`` item (valid/test).

Near-duplicate threshold. Two items are near duplicates when the Jaccard similarity of
their sets of 3-character shingles is at least 0.6, both for the whole conversation
and for the last user turn (the question). Why these numbers: for a text of L characters
with k scattered one-character edits and n-character shingles, J ~ (L-n+1-nk) /
(L-n+1+nk); appending a fraction a of new text gives J ~ 1/(1+a). With 5-character
shingles a single edit in a 40-character question already gives J = 0.76 and three give
0.41, so no 5-gram threshold both catches 1-3 edits in a short question and rejects a
question with its own length of unrelated text appended (5-grams at 0.8 find 11 of the
30 crafted pairs in tests/data/test_curate.py). With 3-grams and 0.6 the rule reads "at
most ~8% of characters edited, or at most ~65% extra text": on the crafted pairs (40-80
characters, 1-3 edits or a phrase appended, plus a short shared reply) true pairs score
0.70-0.93 and distinct questions on the same topic at most 0.16. The last-user-turn
condition keeps items that share a long context but ask different questions (several
C3-D questions about one dialogue, BELLE conversations that share a prefix).

How it is computed. Signatures are datasketch ``MinHash`` (128 permutations, seed 1,
``MinHash.bulk``) of the sorted shingle set; candidates come from datasketch's
``MinHashLSH`` with the band shape chosen so that a pair exactly at the threshold is
proposed with probability >= 0.98 (32 bands of 4 rows at 0.6). The decision and the
reported ``similarity`` use the exact shingle Jaccard, since a 128-permutation estimate
has a standard deviation of ~0.04 near the threshold.

Deterministic: datasketch hashes shingles with SHA-1 (not Python's salted ``hash``),
MinHash has a fixed seed, candidates are sorted and ties go to the earliest item.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from datasketch import LeanMinHash, MinHash, MinHashLSH

from doit.data import abilities
from doit.io import sha256_text, write_json

DEFAULT_THRESHOLD = 0.6
DEFAULT_NGRAM = 3

# Reasons a record is dropped (the report's `reason` field).
EXACT_DUPLICATE = "exact_duplicate"
NEAR_DUPLICATE = "near_duplicate"
TOO_SHORT = "too_short"
TOO_LONG = "too_long"
CONTAMINATED_EXACT = "contaminated_exact"
CONTAMINATED_NEAR = "contaminated_near"

UNTYPED = "(untyped)"  # per-ability label of records without a `type`

# ---------------------------------------------------------------- normalisation

_CHAR_MAP = {
    **{c: c - 0xFEE0 for c in range(0xFF10, 0xFF1A)},  # ０-９
    **{c: c - 0xFEE0 for c in range(0xFF21, 0xFF3B)},  # Ａ-Ｚ
    **{c: c - 0xFEE0 for c in range(0xFF41, 0xFF5B)},  # ａ-ｚ
    **{c: " " for c in (0x3000, 0x00A0, 0x1680, 0x202F, 0x205F, *range(0x2000, 0x200B))},
    **{c: "\n" for c in (0x0D, 0x0B, 0x0C, 0x1C, 0x1D, 0x1E, 0x85, 0x2028, 0x2029)},
}
# Control characters (tab and newline survive) and invisible format characters.
_INVISIBLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]"
)
_INDENT = re.compile(r"[ \t]*")
_SPACES = re.compile(r"[ \t]+")
_BLANK_RUNS = re.compile(r"\n{3,}")
_CJK = "\u2e80-\u303f\u3040-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
_CJK_GAP = re.compile(f"(?<=[{_CJK}]) | (?=[{_CJK}])")  # a space beside a CJK character


def normalize_text(text: str) -> str:
    """Normalise one message: see the module docstring. Idempotent."""
    text = text.replace("\r\n", "\n").translate(_CHAR_MAP)
    text = unicodedata.normalize("NFC", _INVISIBLE.sub("", text))
    lines, fenced = [], False
    for line in text.split("\n"):
        fence = line.lstrip().startswith("```")
        lines.append(line.rstrip() if fenced or fence else _tidy_line(line))
        fenced ^= fence
    return _BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip()


def _tidy_line(line: str) -> str:
    indent = _INDENT.match(line).group()
    rest = _SPACES.sub(" ", line[len(indent) :]).rstrip()
    return indent + rest if rest else ""


@functools.lru_cache(maxsize=1 << 18)
def _match_text(text: str) -> str:
    """The form texts are compared in: normalised, every whitespace run one space, and no
    space beside a CJK character ("请问 ABC 是 什么" reads as "请问ABC是什么")."""
    return _CJK_GAP.sub("", " ".join(normalize_text(text).split()))


def normalize_record(record: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``record`` with its messages, string choices and string answer normalised
    (all with the same function, so ``choices[0] == last assistant message`` still holds)."""
    out = dict(record)
    out["messages"] = [{**m, "content": normalize_text(m["content"])} for m in record["messages"]]
    if isinstance(record.get("choices"), list):
        out["choices"] = [normalize_text(c) if isinstance(c, str) else c for c in record["choices"]]
    if isinstance(record.get("answer"), str):
        out["answer"] = normalize_text(record["answer"])
    return out


# ---------------------------------------------------------------- keys and texts


def _key(turns: list[tuple[str, str]]) -> str:
    return sha256_text(json.dumps(turns, ensure_ascii=False))


def content_key(record: dict[str, Any]) -> str:
    """sha256 hex of every turn's role and normalised content: identity for exact dedup."""
    return _key([(m["role"], _match_text(m["content"])) for m in record["messages"]])


def _user_key(user_texts: list[str]) -> str:
    return _key([("user", t) for t in user_texts])


def _user_texts(record: dict[str, Any]) -> list[str]:
    return [_match_text(m["content"]) for m in record["messages"] if m["role"] == "user"]


def _conversation_text(record: dict[str, Any]) -> str:
    return "\n".join(_match_text(m["content"]) for m in record["messages"])


def _last_user_text(record: dict[str, Any]) -> str:
    users = _user_texts(record)
    return users[-1] if users else ""


# ---------------------------------------------------------------- shingles and MinHash


@functools.lru_cache(maxsize=1 << 12)
def _shingles(text: str, ngram: int) -> frozenset[str]:
    """The set of character n-grams of ``text`` (the whole text when it is shorter)."""
    if len(text) <= ngram:
        return frozenset([text]) if text else frozenset()
    return frozenset(text[i : i + ngram] for i in range(len(text) - ngram + 1))


def _jaccard(a: str, b: str, ngram: int) -> float:
    sa, sb = _shingles(a, ngram), _shingles(b, ngram)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


def _band_shape(threshold: float, num_perm: int) -> tuple[int, int]:
    """(bands, rows) for LSH: the most rows per band (fewest chance candidates) such that
    a pair exactly at the threshold still becomes a candidate with probability >= 0.98."""
    for rows in range(min(num_perm, 16), 1, -1):
        bands = num_perm // rows
        if 1.0 - (1.0 - threshold**rows) ** bands >= 0.98:
            return bands, rows
    return num_perm, 1


class _NearIndex:
    """datasketch ``MinHashLSH`` over ``MinHash`` signatures proposes candidates; exact
    shingle Jaccard decides.

    A candidate matches when both the whole text and the last user turn reach the
    threshold; the best match is the highest whole-text Jaccard, ties to the lowest key.
    """

    def __init__(self, threshold: float, num_perm: int, ngram: int, seed: int) -> None:
        self.threshold, self.ngram, self.num_perm, self.seed = threshold, ngram, num_perm, seed
        params = _band_shape(threshold, num_perm)
        self.lsh = MinHashLSH(threshold=threshold, num_perm=num_perm, params=params)
        self.items: dict[int, tuple[str, str]] = {}

    def signatures(self, texts: Sequence[str]) -> list[LeanMinHash | None]:
        """One MinHash per text (None for an empty text)."""
        sets = [[s.encode("utf-8") for s in sorted(_shingles(t, self.ngram))] for t in texts]
        hashes = MinHash.bulk(sets, num_perm=self.num_perm, seed=self.seed)
        return [h if t else None for h, t in zip(hashes, texts, strict=True)]

    def add(self, key: int, text: str, last: str, sig: LeanMinHash | None) -> None:
        if sig is None:
            return
        self.items[key] = (text, last)
        self.lsh.insert(key, sig, check_duplication=False)

    def best_match(self, text: str, last: str, sig: LeanMinHash | None) -> tuple[int, float] | None:
        if sig is None:
            return None
        best = None
        for key in sorted(self.lsh.query(sig)):
            other_text, other_last = self.items[key]
            sim = _jaccard(text, other_text, self.ngram)
            if sim < self.threshold or _jaccard(last, other_last, self.ngram) < self.threshold:
                continue
            if best is None or sim > best[1]:
                best = (key, sim)
        return None if best is None else (best[0], round(best[1], 4))


def _check_threshold(threshold: float) -> None:
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"near-duplicate threshold must be in (0, 1], got {threshold}")


# ---------------------------------------------------------------- stages

Records = Sequence[dict[str, Any]]


@dataclass(frozen=True)
class Drop:
    """One item a stage dropped, by its position in the list that stage was given."""

    position: int
    reason: str
    duplicate_of: int | None = None  # position of the kept item (or `against` item) it repeats
    similarity: float | None = None  # exact shingle Jaccard, near duplicates only
    detail: str = ""


def _split(records: Records, drops: list[Drop]) -> tuple[list[dict[str, Any]], list[Drop]]:
    gone = {d.position for d in drops}
    return [r for i, r in enumerate(records) if i not in gone], drops


def exact_dedup(records: Records) -> tuple[list[dict[str, Any]], list[Drop]]:
    """Keep the first record of every ``content_key``."""
    first: dict[str, int] = {}
    drops = []
    for i, record in enumerate(records):
        key = content_key(record)
        if key in first:
            drops.append(Drop(i, EXACT_DUPLICATE, first[key], 1.0))
        else:
            first[key] = i
    return _split(records, drops)


def near_dedup(
    records: Records,
    threshold: float = DEFAULT_THRESHOLD,
    num_perm: int = 128,
    ngram: int = DEFAULT_NGRAM,
    seed: int = 1,
) -> tuple[list[dict[str, Any]], list[Drop]]:
    """Keep the first record of every near-duplicate cluster (see the module docstring);
    a dropped record points at the kept record it is most similar to."""
    _check_threshold(threshold)
    texts = [_conversation_text(r) for r in records]
    lasts = [_last_user_text(r) for r in records]
    index = _NearIndex(threshold, num_perm, ngram, seed)
    drops = []
    for i, bands in enumerate(index.signatures(texts)):
        match = index.best_match(texts[i], lasts[i], bands)
        if match is None:
            index.add(i, texts[i], lasts[i], bands)
        else:
            drops.append(Drop(i, NEAR_DUPLICATE, *match))
    return _split(records, drops)


def count_tokens(tokenizer: Any, texts: list[str]) -> list[int]:
    """Token counts with a Hugging Face tokenizer (callable) or a raw ``tokenizers.Tokenizer``."""
    if not texts:
        return []
    if not callable(tokenizer) and hasattr(tokenizer, "encode_batch"):
        return [len(e.ids) for e in tokenizer.encode_batch(texts, add_special_tokens=False)]
    return [len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]]


def length_filter(
    records: Records, tokenizer: Any, min_tokens: int = 1, max_tokens: int = 2048
) -> tuple[list[dict[str, Any]], list[Drop]]:
    """Drop records whose conversation (contents joined by newlines, no special or speaker
    tokens) has fewer than ``min_tokens`` or more than ``max_tokens`` tokens; a no-op
    without a tokenizer."""
    if tokenizer is None:
        return list(records), []
    texts = ["\n".join(m["content"] for m in r["messages"]) for r in records]
    drops = []
    for i, n in enumerate(count_tokens(tokenizer, texts)):
        if n < min_tokens:
            drops.append(Drop(i, TOO_SHORT, detail=f"{n} tokens < min_tokens {min_tokens}"))
        elif n > max_tokens:
            drops.append(Drop(i, TOO_LONG, detail=f"{n} tokens > max_tokens {max_tokens}"))
    return _split(records, drops)


def contamination(
    records: Records,
    against_records: Records,
    threshold: float = DEFAULT_THRESHOLD,
    num_perm: int = 128,
    ngram: int = DEFAULT_NGRAM,
    seed: int = 1,
) -> tuple[list[dict[str, Any]], list[Drop]]:
    """Drop records whose question (user turns) equals or nearly equals that of an
    ``against_records`` item; ``duplicate_of`` is the position in ``against_records``."""
    _check_threshold(threshold)
    theirs = [_user_texts(r) for r in against_records]
    exact: dict[str, int] = {}
    index = _NearIndex(threshold, num_perm, ngram, seed)
    texts = ["\n".join(users) for users in theirs]
    for j, bands in enumerate(index.signatures(texts)):
        if texts[j]:
            exact.setdefault(_user_key(theirs[j]), j)
            index.add(j, texts[j], theirs[j][-1], bands)
    ours = [_user_texts(r) for r in records]
    texts = ["\n".join(users) for users in ours]
    drops = []
    for i, bands in enumerate(index.signatures(texts)):
        if not texts[i]:
            continue  # no question, nothing to leak
        if (j := exact.get(_user_key(ours[i]))) is not None:
            drops.append(Drop(i, CONTAMINATED_EXACT, j, 1.0))
        elif match := index.best_match(texts[i], ours[i][-1], bands):
            drops.append(Drop(i, CONTAMINATED_NEAR, *match))
    return _split(records, drops)


# ---------------------------------------------------------------- the pipeline

STAGES = ("exact_dedup", "near_dedup", "length_filter", "contamination")
Stage = Callable[[Records], tuple[list[dict[str, Any]], list[Drop]]]
Origin = tuple[str | None, int | None]  # (source file, 1-based line)


@dataclass
class CurateResult:
    kept: list[dict[str, Any]]  # normalised records, in input order
    report: dict[str, Any]  # settings, counts per stage and ability, every dropped item
    kept_index: list[int]  # input position of every kept record (to write them per file)


def curate(
    records: Records,
    *,
    against: Records | None = None,
    tokenizer: Any = None,
    near_threshold: float | None = DEFAULT_THRESHOLD,
    contamination_threshold: float | None = None,
    ngram: int = DEFAULT_NGRAM,
    num_perm: int = 128,
    seed: int = 1,
    min_tokens: int = 1,
    max_tokens: int = 2048,
    origins: Sequence[Origin] | None = None,
    against_origins: Sequence[Origin] | None = None,
) -> CurateResult:
    """Normalise -> exact dedup -> near dedup -> length filter -> contamination.

    ``origins[i]`` (or the record's own ``_source``/``_line``) names where record i came
    from in the report; ``against_origins`` does the same for ``against``. The length
    filter runs only with a tokenizer, the contamination check only with ``against``, near
    dedup unless ``near_threshold`` is None. ``contamination_threshold`` defaults to
    ``near_threshold`` (to DEFAULT_THRESHOLD when that is None).
    """
    records, against = list(records), None if against is None else list(against)
    _check_records(records, "input", origins)
    _check_records(against or [], "against", against_origins)
    cont_threshold = next(
        t for t in (contamination_threshold, near_threshold, DEFAULT_THRESHOLD) if t is not None
    )
    near = {"num_perm": num_perm, "ngram": ngram, "seed": seed}
    runs: dict[str, Stage | None] = {
        "exact_dedup": exact_dedup,
        "near_dedup": None
        if near_threshold is None
        else lambda rs: near_dedup(rs, near_threshold, **near),
        "length_filter": None
        if tokenizer is None
        else lambda rs: length_filter(rs, tokenizer, min_tokens, max_tokens),
        "contamination": None
        if against is None
        else lambda rs: contamination(rs, against, cont_threshold, **near),
    }
    clean = [normalize_record(r) for r in records]
    alive, stage_drops = _run_stages(clean, runs)
    settings = {
        "near_threshold": near_threshold,
        "contamination_threshold": cont_threshold,
        "min_tokens": min_tokens if tokenizer is not None else None,
        "max_tokens": max_tokens if tokenizer is not None else None,
        "against_items": None if against is None else len(against),
        **near,
    }
    corpora = {"input": (records, origins), "against": (against or [], against_origins)}
    report = _report(settings, corpora, stage_drops, alive)
    report["counts"]["changed_by_normalisation"] = sum(
        c != r for c, r in zip(clean, records, strict=True)
    )
    _match_text.cache_clear()  # it holds about one copy of the corpus while the stages run
    return CurateResult([clean[i] for i in alive], report, alive)


def _run_stages(
    clean: list[dict[str, Any]], runs: dict[str, Stage | None]
) -> tuple[list[int], dict[str, list[tuple[int, Drop, int | None]]]]:
    """Run the stages in order; return the input indices kept and, per stage that ran,
    (input index, drop, input or `against` index of what it repeats) for every drop."""
    alive = list(range(len(clean)))
    stage_drops = {}
    for stage, run in runs.items():
        if run is None:
            continue
        _, drops = run([clean[i] for i in alive])
        stage_drops[stage] = [(alive[d.position], d, _other(d, alive, stage)) for d in drops]
        gone = {d.position for d in drops}
        alive = [i for p, i in enumerate(alive) if p not in gone]
    return alive, stage_drops


def _other(drop: Drop, alive: list[int], stage: str) -> int | None:
    """The input index (or `against` index, for contamination) of what ``drop`` repeats."""
    if drop.duplicate_of is None or stage == "contamination":
        return drop.duplicate_of
    return alive[drop.duplicate_of]


def _check_records(records: Records, what: str, origins: Sequence[Origin] | None) -> None:
    if origins is not None and len(origins) != len(records):
        raise ValueError(f"{what}: {len(origins)} origins for {len(records)} records")
    for i, record in enumerate(records):
        messages = record.get("messages") if isinstance(record, dict) else None
        ok = isinstance(messages, list) and all(
            isinstance(m, dict)
            and isinstance(m.get("role"), str)
            and isinstance(m.get("content"), str)
            for m in messages
        )
        if not ok:
            where = _origin(record if isinstance(record, dict) else {}, i, origins)
            raise ValueError(
                f"{what} record {i} (source {where[0]}, line {where[1]}): `messages` must be a "
                "list of {role: str, content: str} dicts; fix or remove that record"
            )


def _origin(record: dict[str, Any], i: int, origins: Sequence[Origin] | None) -> Origin:
    if "_source" in record or "_line" in record:
        return record.get("_source"), record.get("_line")
    return origins[i] if origins is not None else (None, None)


# ---------------------------------------------------------------- the report

Corpora = dict[str, tuple[Records, Sequence[Origin] | None]]


def _report(
    settings: dict[str, Any],
    corpora: Corpora,
    stage_drops: dict[str, list[tuple[int, Drop, int | None]]],
    alive: list[int],
) -> dict[str, Any]:
    records = corpora["input"][0]
    labels = [_ability_label(r) for r in records]
    by_ability = {
        a: {"input": 0, **dict.fromkeys(stage_drops, 0), "kept": 0} for a in _order(labels)
    }
    for label in labels:
        by_ability[label]["input"] += 1
    for i in alive:
        by_ability[labels[i]]["kept"] += 1
    stages, dropped, remaining = [], [], len(records)
    for stage, drops in stage_drops.items():
        out = remaining - len(drops)
        stages.append({"stage": stage, "in": remaining, "dropped": len(drops), "out": out})
        remaining = out
        for index, drop, other in drops:
            by_ability[labels[index]][stage] += 1
            other_corpus = "against" if stage == "contamination" else "input"
            dropped.append(
                {
                    "stage": stage,
                    "reason": drop.reason,
                    **_describe(corpora, "input", index),
                    "duplicate_of": None
                    if other is None
                    else _describe(corpora, other_corpus, other),
                    "similarity": drop.similarity,
                    "detail": drop.detail,
                }
            )
    counts = {"input": len(records), "kept": len(alive), "dropped": len(records) - len(alive)}
    skipped = [s for s in STAGES if s not in stage_drops]
    return {
        "settings": settings,
        "counts": {**counts, "stages": stages, "skipped_stages": skipped},
        "by_ability": by_ability,
        "dropped": dropped,
    }


def _describe(corpora: Corpora, corpus: str, index: int) -> dict[str, Any]:
    records, origins = corpora[corpus]
    record = records[index]
    source, line = _origin(record, index, origins)
    return {
        "corpus": corpus,
        "index": index,
        "source": source,
        "line": line,
        "idx": record.get("idx"),
        "type": record.get("type"),
        "ability": _ability_label(record),
    }


def _ability_label(record: dict[str, Any]) -> str:
    """Canonical ability key; the raw `type` when it is unknown; UNTYPED when absent."""
    kind = record.get("type")
    if not isinstance(kind, str) or not kind.strip():
        return UNTYPED
    return abilities.canonical_key(kind) or kind


def _order(labels: list[str]) -> list[str]:
    """Registry order first, then unknown labels sorted (never set order)."""
    present = Counter(labels)
    known = [a.key for a in abilities.ALL if a.key in present]
    return known + sorted(k for k in present if k not in known)


def write_report(result: CurateResult, path: str | Path) -> Path:
    """Write ``result.report`` as indented UTF-8 JSON, atomically."""
    return write_json(path, result.report)
