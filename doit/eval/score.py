"""Scoring predictions against items: per-item rules, per-ability scores, both averages.

This is the one scoring function: ``python -m doit.eval score``, the grid runner and
the analysis all call ``score_predictions``. Output schema (``SCORES.json``)::

    {"abilities": {key: {"score": 0-100 or null, "n_items": int, "n_missing": int,
                         "chance": 0-100, "by_kind": {kind: {"score", "n_items", "n_missing"}},
                         # math only: "score_paper", "score_verify"
                         }},
     "macro_in_domain": mean of the 10 abilities (null if any is missing or null:
                        doit.data.macro, the one macro rule),
     "overall": mean of the 10 + 3 C-Eval sets, the study's definition (null likewise),
     "rules": {"math": "paper"|"verify", "ties": "correct"|"wrong",
               "norm": "token"|"char"|"pmi" (the text formulation's ranking), "mc_fallback": ...,
               "open": ..., "text": ..., "missing": "null"|"wrong",
               "predict": PRED.rules.json's content (its "formulation" among it), or null},
     "items": [{"type", "idx", "ability", "answer_kind", "gold", "extracted", "correct", ...}],
               (and "cluster" where the item has one),
     # written by doit.eval.evaluate only:
     "eval_s": seconds from loading to scored, "n_no_output": {ability: items whose
               prompt did not fit the context}}

An item row's fields after ``gold`` are its answer kind's judge's (``doit.eval.kinds``):
``extracted`` and ``correct`` always; mc adds ``via`` (output | logits), math
``correct_paper`` and ``correct_verify``; a ranked kind's ``extracted`` is the index of its
best text (open: lowest perplexity; the text formulation's kinds: highest score under
``norm``). A missing item's row has ``"missing": true``.

Items are scored in the formulation their predictions were made in (``PRED.rules.json``'s
``formulation``, letter when absent: ``formulation_of``); a prediction whose ``answer_kind``
is not its item's (an mc line for an mc_text item) is an error naming its line.

An ability is listed once it has a prediction. ``n_items`` counts its items in the split,
``n_missing`` those without a prediction; any missing item makes its score null unless
``allow_missing``, which counts each missing item wrong (an item row with
``"missing": true``). Two predictions for one (type, idx) are an error.

The reference code's cross-ability "average" divided by twice the count; these are
true means.
"""

from __future__ import annotations

from doit.data import abilities as ab
from doit.data import kinds as ak
from doit.data.macro import complete_mean, macro
from doit.eval import kinds
from doit.io import read_json, read_jsonl


def score_item(
    item: dict, pred: dict, math: str = "paper", ties: str = "correct", norm: str | None = None
) -> dict:
    """Per-item verdict: ``correct`` plus what was extracted (math: both rules), as the item's
    answer kind extracts and judges (``doit.eval.kinds``); an item's ``cluster``, when it has
    one, rides along (the paired bootstrap resamples clusters)."""
    return {
        "type": item["type"],
        "idx": item["idx"],
        "ability": item["ability"],
        "answer_kind": item["answer_kind"],
        "gold": item["gold"],
        **_cluster(item),
        **kinds.judge(item, pred, _rules(math, ties, norm)),
    }


def _cluster(item: dict) -> dict:
    return {} if item.get("cluster") is None else {"cluster": item["cluster"]}


def _rules(math: str, ties: str, norm: str | None) -> kinds.Rules:
    return kinds.Rules(math, ties, norm or kinds.DEFAULT_NORM)


def missing_row(item: dict) -> dict:
    """The row of an item with no prediction: wrong on every rule, marked missing."""
    row = {"extracted": None, "correct": False, "missing": True}
    row |= dict.fromkeys(kinds.behaviour(item["answer_kind"]).extra_verdicts, False)
    keys = ("type", "idx", "ability", "answer_kind", "gold")
    return {**{k: item[k] for k in keys}, **_cluster(item), **row}


def _pct(values: list[bool], n_missing: int, allow_missing: bool) -> float | None:
    if n_missing and not allow_missing:
        return None
    return 100.0 * sum(values) / len(values)


def _part(rows: list[dict], field: str, allow_missing: bool) -> dict:
    n_missing = sum(bool(r.get("missing")) for r in rows)
    return {
        "score": _pct([r[field] for r in rows], n_missing, allow_missing),
        "n_items": len(rows),
        "n_missing": n_missing,
    }


def ability_entry(rows: list[dict], items: list[dict], allow_missing: bool = False) -> dict:
    """Score, counts and chance of one ability from all its item rows (missing ones too)."""
    entry = {
        **_part(rows, "correct", allow_missing),
        "chance": 100.0 * sum(it["chance"] for it in items) / len(items),
        "by_kind": {},
    }
    for kind in sorted({r["answer_kind"] for r in rows}):
        sub = [r for r in rows if r["answer_kind"] == kind]
        entry["by_kind"][kind] = _part(sub, "correct", allow_missing)
    if any("correct_paper" in r for r in rows):
        entry["score_paper"] = _part(rows, "correct_paper", allow_missing)["score"]
        entry["score_verify"] = _part(rows, "correct_verify", allow_missing)["score"]
    return entry


def match_predictions(items: list[dict], preds: list, source: str) -> dict:
    """{(type, idx): (line, prediction)}; an unknown or repeated key is a located error.
    ``preds``: prediction dicts, or (line, prediction) pairs as `read_predictions` gives."""
    by_key = {(it["type"], it["idx"]): it["answer_kind"] for it in items}
    found: dict = {}
    for n, entry in enumerate(preds, start=1):
        line, pred = entry if isinstance(entry, tuple) else (n, entry)
        key = (ab.item_type(pred.get("type", "")), pred.get("idx"))
        if key not in by_key:
            raise ValueError(f"{source}:{line}: type/idx: {key} matches no item of the data split")
        kind = pred.get("answer_kind")
        if kind is not None and kind != by_key[key]:
            raise ValueError(
                f"{source}:{line}: answer_kind: {kind!r}, but the item is "
                f"{by_key[key]!r} (predicted in another formulation than the items "
                "are rendered in: PRED.rules.json's formulation)"
            )
        if key in found:
            raise ValueError(
                f"{source}:{line}: type/idx: {key} repeats line {found[key][0]} "
                "(one prediction per item; re-runs must not append)"
            )
        found[key] = (line, pred)
    return found


def score_predictions(
    items: list[dict],
    preds: list[dict],
    math: str = "paper",
    ties: str = "correct",
    source: str = "<predictions>",
    allow_missing: bool = False,
    norm: str | None = None,
) -> dict:
    rules = _rules(math, ties, norm)  # refuses unknown rules before anything is read
    found = match_predictions(items, preds, source)
    predicted = {it["ability"] for it in items if (it["type"], it["idx"]) in found}
    rows = []
    for it in items:
        if it["ability"] not in predicted:
            continue
        hit = found.get((it["type"], it["idx"]))
        rows.append(missing_row(it) if hit is None else score_item(it, hit[1], math, ties, norm))
    abilities = {}
    for a in ab.ALL:
        if a.key in predicted:
            sel = [r for r in rows if r["ability"] == a.key]
            mine = [it for it in items if it["ability"] == a.key]
            abilities[a.key] = ability_entry(sel, mine, allow_missing)
    scores = {k: entry["score"] for k, entry in abilities.items()}
    return {
        "abilities": abilities,
        "macro_in_domain": macro(scores),
        "overall": complete_mean(scores, ab.ABILITY_KEYS + ab.OOD_KEYS),
        "rules": {
            "math": math,
            "ties": ties,
            "norm": rules.norm,
            **kinds.rule_notes(rules),
            "missing": "wrong" if allow_missing else "null",
        },
        "items": rows,
    }


def score_file(
    items: list[dict],
    predictions,
    math="paper",
    ties="correct",
    allow_missing=False,
    norm: str | None = None,
):
    """``score_predictions`` of a PRED.jsonl, with its PRED.rules.json under ``rules.predict``.
    ``items`` must be rendered in the predictions' formulation (``formulation_of``); ``norm``
    (None: the one PRED.rules.json records, else ``kinds.DEFAULT_NORM``) ranks their texts."""

    from doit.eval.predict import rules_path

    path = rules_path(predictions)  # budgets, n_hit_budget, stop tokens, letters, norm
    recorded = read_json(path) if path.is_file() else None
    norm = norm or (recorded or {}).get("norm")
    result = score_predictions(
        items,
        read_predictions(predictions),
        math,
        ties,
        str(predictions),
        allow_missing=allow_missing,
        norm=norm,
    )
    result["rules"]["predict"] = recorded
    return result


def formulation_of(predictions) -> str:
    """The formulation a PRED.jsonl's items were rendered in: its PRED.rules.json's
    ``formulation`` (letter when the file or the key is absent: written before formulations)."""
    from doit.eval.predict import rules_path

    rules = rules_path(predictions)
    found = (read_json(rules) if rules.is_file() else {}).get("formulation", ak.LETTER)
    try:
        return ak.check_formulation(found)
    except ValueError as e:
        raise ValueError(f"{rules}: {e}") from None


def read_predictions(path) -> list[tuple[int, dict]]:
    """(line, prediction) of every line of a PRED.jsonl, each checked against the predictions
    contract (`check_prediction`); an empty file is an error."""
    out = []
    for line, rec in read_jsonl(path):
        check_prediction(rec, f"{path}:{line}")
        out.append((line, rec))
    if not out:
        raise ValueError(f"{path}: no predictions (an empty predictions file)")
    return out


def _number(v) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _numbers(v) -> bool:
    return isinstance(v, list) and bool(v) and all(_number(x) for x in v)


# The predictions contract (doit.eval.predict's docstring): each field's check and what it says.
PREDICTION_FIELDS = {
    "type": (lambda v: isinstance(v, str), "a string"),
    "idx": (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
    "question_format": (lambda v: v in (0, 1), "0 or 1"),
    "answer_kind": (lambda v: v in ak.ANSWER_KINDS, f"one of {', '.join(ak.ANSWER_KINDS)}"),
    "prediction": (lambda v: isinstance(v, str), "a string"),
    "max_new_tokens": (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
    "hit_budget": (lambda v: isinstance(v, bool), "true or false"),
    "letter_logits": (
        lambda v: (
            isinstance(v, dict) and all(isinstance(k, str) and _number(x) for k, x in v.items())
        ),
        "a mapping of option letters to numbers",
    ),
    "choice_ppl": (_numbers, "a non-empty list of numbers"),
    "choice_logprob": (_numbers, "a non-empty list of numbers"),
    "choice_tokens": (_numbers, "a non-empty list of numbers"),
    "choice_chars": (_numbers, "a non-empty list of numbers"),
    "choice_uncond": (_numbers, "a non-empty list of numbers"),
    "error": (lambda v: isinstance(v, str), "a string"),
}
REQUIRED_FIELDS = ("type", "idx")


def check_prediction(rec, where: str) -> None:
    """Raise ValueError naming ``where`` (file:line) and the field when ``rec`` breaks the
    predictions contract (unknown fields are allowed: later versions may add some)."""
    if not isinstance(rec, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(rec).__name__}")
    for key in REQUIRED_FIELDS:
        if key not in rec:
            raise ValueError(f"{where}: {key}: missing")
    for key, (ok, what) in PREDICTION_FIELDS.items():
        if key in rec and rec[key] is not None and not ok(rec[key]):
            raise ValueError(f"{where}: {key}: expected {what}, got {rec[key]!r}")
