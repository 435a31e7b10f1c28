"""One call from a model to its scores: ``evaluate(model, data_dir, split, budgets, ...)``.

It loads the split's items and the model (once: a ``Model`` shared by several calls loads on
first use), predicts, scores, and writes, each atomically, ``PRED.jsonl`` and
``PRED.rules.json`` (``doit.eval.predict``) and then ``SCORES.json`` (``doit.eval.score``,
plus ``eval_s`` and ``n_no_output``), so an existing scores file means a finished split.
The grid runner calls it per split; ``python -m doit.eval predict`` and ``score`` run its two
halves (``load_split_items`` + ``predict_split``, then ``score_file``) as separate commands.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from doit.data.kinds import LETTER
from doit.io import read_jsonl, write_json

log = logging.getLogger("doit.eval")


@dataclass
class Model:
    """A model to predict with: ``doit.models.load_for_inference``'s arguments, loaded on the
    first ``load()`` and kept, so the splits of one checkpoint share one load."""

    path: str  # model directory (a full model, or the adapter's base)
    adapter: str | None = None  # PEFT adapter directory
    dtype: str = "auto"  # auto | bf16 | fp16 | fp32
    chat_format: str | None = None  # doit | native: render an untuned base as fine-tuning will
    seed: int = 0  # fine-tuning's seed: initialises speaker-token rows added to an untuned base
    _loaded: tuple | None = field(default=None, init=False, repr=False)

    def load(self) -> tuple[Any, Any]:
        """(model, tokenizer), loaded on the first call."""
        if self._loaded is None:
            from doit.models import load_for_inference

            self._loaded = load_for_inference(
                str(self.path), self.adapter, self.dtype, self.chat_format, self.seed
            )
        return self._loaded


def output_paths(folder: str | Path, split: str, formulation: str = LETTER) -> tuple[Path, Path]:
    """(``<split>.pred.jsonl``, ``<split>.scores.json``) in ``folder``, ``<split>.text.pred.jsonl``
    ... for another formulation than letter; the rules file lies beside the predictions
    (``doit.eval.predict.rules_path``)."""
    stem = split if formulation == LETTER else f"{split}.{formulation}"
    return Path(folder) / f"{stem}.pred.jsonl", Path(folder) / f"{stem}.scores.json"


def load_split_items(
    data_dir,
    split: str,
    abilities=None,
    ood: bool = True,
    formulation: str = LETTER,
    per_ability: int | None = None,
) -> list[dict]:
    """The items to evaluate: ``abilities`` (keys, or a comma-separated string; default all)
    of ``split``, rendered in ``formulation`` (``doit.data.kinds.formulate``); ``ood``
    adds the C-Eval sets to whatever ``abilities`` names, and a C-Eval set named in
    ``abilities`` is loaded without it. ``per_ability``: only the first that many items of
    each in-domain ability, in file order (a grid's ``held_out_items``; the C-Eval sets are
    kept whole); None: all."""
    from doit.data import abilities as ab
    from doit.data import kinds as ak
    from doit.data.load import load_items

    ak.check_formulation(formulation)
    named = list(ab.parse_keys(abilities))
    keys = named + [k for k in ab.OOD_KEYS if k not in named] if named and ood else named
    ood = ood or any(k in ab.OOD_KEYS for k in keys)
    items = load_items(data_dir, split, abilities=keys or None, ood=ood)
    lacking = sorted(set(named or ab.ABILITY_KEYS) - {it["ability"] for it in items})
    if lacking and named:
        from doit.data.schema import DataError, Problem

        raise DataError(
            [
                Problem(
                    str(data_dir),
                    0,
                    "abilities",
                    f"{split} has no items for {', '.join(lacking)}, which --abilities names",
                )
            ]
        )
    if lacking:
        log.warning(
            "%s: the %s split has no items for %s (scored without them)",
            data_dir,
            split,
            ", ".join(lacking),
        )
    if per_ability is not None:
        items = first_per_ability(items, per_ability, keep=ab.OOD_KEYS)
    return [ak.formulate(it, formulation) for it in items]


def first_per_ability(items: list[dict], n: int, keep=()) -> list[dict]:
    """The first ``n`` items of each ability, in order; abilities in ``keep`` whole."""
    seen: dict[str, int] = {}
    out = []
    for it in items:
        seen[it["ability"]] = seen.get(it["ability"], 0) + 1
        if it["ability"] in keep or seen[it["ability"]] <= n:
            out.append(it)
    return out


def predict_split(
    model: Model,
    items: list[dict],
    predictions,
    budgets=None,
    batch_size: int = 16,
    formulation: str = LETTER,
) -> dict:
    """Predict ``items`` (rendered in ``formulation``) into ``predictions`` (and its rules file
    beside it, which records the formulation); the rules. Budgets are checked before the model
    loads."""
    from doit.eval import predict

    limits = predict.budgets(budgets)
    loaded, tokenizer = model.load()
    return predict.predict_to(
        predictions, loaded, tokenizer, items, batch_size, limits, model.chat_format, formulation
    )


def evaluate(
    model: Model | str | Path,
    data_dir,
    split: str,
    budgets: dict[str, int] | None = None,
    *,
    folder: str | Path | None = None,
    predictions: str | Path | None = None,
    scores: str | Path | None = None,
    batch_size: int = 16,
    abilities=None,
    ood: bool = True,
    math: str = "paper",
    ties: str = "correct",
    allow_missing: bool = False,
    formulation: str = LETTER,
    norm: str | None = None,
    per_ability: int | None = None,
) -> dict[str, Any]:
    """Predict and score ``split`` of ``data_dir`` with ``model`` (a directory, or a ``Model``
    to share one load), its items rendered in ``formulation``; returns SCORES.json's content.
    Files go to ``predictions`` and ``scores``, by default ``output_paths(folder, split,
    formulation)``. ``budgets``: max_new_tokens per generated kind (default: each kind's);
    ``norm``: the text formulation's ranking (default ``doit.eval.kinds.DEFAULT_NORM``);
    ``per_ability``: the first that many items of each in-domain ability (``load_split_items``)."""
    from doit.eval.score import score_file

    if folder is None and (predictions is None or scores is None):
        raise ValueError("evaluate: give a folder, or both the predictions and scores paths")
    default_pred, default_scores = output_paths(folder or ".", split, formulation)
    predictions, scores = Path(predictions or default_pred), Path(scores or default_scores)
    model = model if isinstance(model, Model) else Model(str(model))
    started = time.perf_counter()
    items = load_split_items(data_dir, split, abilities, ood, formulation, per_ability)
    predict_split(model, items, predictions, budgets, batch_size, formulation)
    result = score_file(items, predictions, math, ties, allow_missing, norm)
    result["eval_s"] = round(time.perf_counter() - started, 3)
    result["n_no_output"] = no_output(predictions, result["items"])
    write_json(scores, result)
    return result


def no_output(predictions, rows: list[dict]) -> dict[str, int]:
    """Per ability, items whose prediction is an error (a prompt, or a prompt and a ranked
    text, longer than the context)."""
    failed = {(p["type"], p["idx"]) for _, p in read_jsonl(predictions) if p.get("error")}
    out: dict[str, int] = {}
    for r in rows:
        if (r["type"], r["idx"]) in failed:
            out[r["ability"]] = out.get(r["ability"], 0) + 1
    return out
