"""Scoring predictions against items: per-item rules, per-ability scores, both averages.

This is the one scoring function: ``python -m doit.eval score``, the grid runner and
the analysis all call ``score_predictions``. Output schema (``SCORES.json``)::

    {"abilities": {key: {"score": 0-100, "n_items": int, "chance": 0-100,
                         "by_kind": {kind: {"score", "n_items"}},
                         # math only: "score_paper", "score_verify"
                         }},
     "macro_in_domain": mean of the 10 abilities (null if any is missing),
     "overall": mean of the 10 + 3 C-Eval sets, the study's definition (null if any missing),
     "rules": {"math": "paper"|"verify", "ties": "correct"|"wrong", "mc_fallback": ...},
     "items": [{"type", "idx", "ability", "answer_kind", "correct", "extracted", ...}]}

The reference code's cross-ability "average" divided by twice the count; these are
true means.
"""

from __future__ import annotations

from doit.data import abilities as ab
from doit.data.io import read_jsonl
from doit.eval import parsers
from doit.eval.math_equiv import equal_paper, equal_verify

MATH_RULES = ("paper", "verify")
TIE_RULES = ("correct", "wrong")
MC_FALLBACK = "first-step logit over the item's own option letters"


def _mc(item, pred) -> dict:
    letter = parsers.mc_letter(pred["prediction"], item["options"])
    via = "output"
    if letter is None:
        letter, via = parsers.logit_choice(pred.get("letter_logits"), item["options"]), "logits"
    return {"extracted": letter, "via": via, "correct": letter == item["gold"]}


def _open(item, pred, ties: str) -> dict:
    ppl = pred.get("choice_ppl")
    if not ppl or len(ppl) != 3:
        return {"correct": False, "extracted": None, "via": "missing choice_ppl"}
    gold, best_other = ppl[0], min(ppl[1:])
    correct = gold <= best_other if ties == "correct" else gold < best_other
    return {"correct": bool(correct), "extracted": ppl.index(min(ppl))}


def score_item(item: dict, pred: dict, math: str = "paper", ties: str = "correct") -> dict:
    """Per-item verdict: ``correct`` plus what was extracted (math: both rules)."""
    kind, text = item["answer_kind"], pred.get("prediction") or ""
    if kind == ab.MC:
        out = _mc(item, pred)
    elif kind == ab.OPEN:
        out = _open(item, pred, ties)
    elif kind == ab.MATH:
        got = parsers.math_answer(text)
        paper, verify = equal_paper(got, item["gold"]), equal_verify(got, item["gold"])
        out = {
            "extracted": got,
            "correct_paper": paper,
            "correct_verify": verify,
            "correct": paper if math == "paper" else verify,
        }
    else:
        extract = {
            ab.TF: parsers.tf_answer,
            ab.CLOZE: parsers.cloze_answer,
            ab.MULTISELECT: parsers.multiselect_answer,
        }[kind]
        got = extract(text)
        out = {"extracted": got, "correct": got is not None and got == item["gold"]}
    return {
        "type": item["type"],
        "idx": item["idx"],
        "ability": item["ability"],
        "answer_kind": kind,
        "gold": item["gold"],
        **out,
    }


def _pct(values: list[bool]) -> float:
    return 100.0 * sum(values) / len(values)


def ability_entry(rows: list[dict], items: list[dict]) -> dict:
    entry = {
        "score": _pct([r["correct"] for r in rows]),
        "n_items": len(rows),
        "chance": 100.0 * sum(it["chance"] for it in items) / len(items),
        "by_kind": {},
    }
    for kind in sorted({r["answer_kind"] for r in rows}):
        sub = [r["correct"] for r in rows if r["answer_kind"] == kind]
        entry["by_kind"][kind] = {"score": _pct(sub), "n_items": len(sub)}
    if any("correct_paper" in r for r in rows):
        entry["score_paper"] = _pct([r["correct_paper"] for r in rows])
        entry["score_verify"] = _pct([r["correct_verify"] for r in rows])
    return entry


def _mean_if_complete(abilities: dict, keys: tuple[str, ...]) -> float | None:
    if any(k not in abilities for k in keys):
        return None
    return sum(abilities[k]["score"] for k in keys) / len(keys)


def score_predictions(
    items: list[dict],
    preds: list[dict],
    math: str = "paper",
    ties: str = "correct",
    source: str = "<predictions>",
) -> dict:
    if math not in MATH_RULES or ties not in TIE_RULES:
        raise ValueError(f"math must be one of {MATH_RULES} and ties one of {TIE_RULES}")
    by_key = {(it["type"], it["idx"]): it for it in items}
    rows, used = [], []
    for line, pred in enumerate(preds, start=1):
        key = (str(pred.get("type", "")).replace("-", "_"), pred.get("idx"))
        if key not in by_key:
            raise ValueError(f"{source}:{line}: type/idx: {key} matches no item of the data split")
        rows.append(score_item(by_key[key], pred, math, ties))
        used.append(by_key[key])
    abilities = {}
    for a in ab.ALL:
        sel = [i for i, r in enumerate(rows) if r["ability"] == a.key]
        if sel:
            abilities[a.key] = ability_entry([rows[i] for i in sel], [used[i] for i in sel])
    return {
        "abilities": abilities,
        "macro_in_domain": _mean_if_complete(abilities, ab.ABILITY_KEYS),
        "overall": _mean_if_complete(abilities, ab.ABILITY_KEYS + ab.OOD_KEYS),
        "rules": {
            "math": math,
            "ties": ties,
            "mc_fallback": MC_FALLBACK,
            "open": "ppl(gold) <= min(distractors)"
            if ties == "correct"
            else "ppl(gold) < min(distractors)",
        },
        "items": rows,
    }


def read_predictions(path) -> list[dict]:
    return [rec for _, rec in read_jsonl(path)]
