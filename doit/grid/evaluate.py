"""Scoring a cell's checkpoints and turning the scores into results rows.

Each scored checkpoint gets ``cells/<id>/eval/e<epoch>-s<step>/``: for each split and each
formulation it is scored in (the cell's, then the grid's other ``eval_formulations``),
``<split>[.<formulation>].pred.jsonl`` + ``.pred.rules.json`` (doit.eval.predict) and
``<split>[.<formulation>].scores.json`` (doit.eval.score; letter keeps the bare names),
written atomically; a scores file that exists is read back, so a cell killed mid-evaluation
re-scores only what is missing. Splits: ``valid`` (the ten abilities) and ``test`` (the ten
plus the C-Eval sets); public benchmarks the grid names add ``<name>`` (0-shot) or
``<name>-<k>shot`` rows.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

from doit import faults
from doit.data.kinds import LETTER
from doit.grid.spec import Grid
from doit.io import read_json, write_json
from doit.train import rundir

SPLITS = ("valid", "test")


def checkpoint_folder(cell_folder: Path, epoch: float, step: int, stage=None) -> Path:
    """Where a scored checkpoint's predictions and scores lie: ``<cell>/eval/e<epoch>-s<step>``
    (an earlier stage's final model of a staged run: ``eval/stage<k>-e<epoch>-s<step>``)."""
    prefix = "" if stage is None else f"stage{stage}-"
    return Path(cell_folder) / "eval" / f"{prefix}e{epoch:g}-s{step}"


def checkpoints_to_score(run_dir: Path, eval_epochs) -> list[tuple[float, int, Path]]:
    """(epoch, step, model dir) of the checkpoints ``eval_epochs`` names (all | last | [e...]),
    a staged run's of its last stage (`rundir.model_dir`)."""
    done = rundir.read_done(run_dir) or {}
    if eval_epochs == "last":
        return [(float(done["epoch"]), int(done["step"]), rundir.model_dir(run_dir))]
    out = []
    for ckpt in rundir.checkpoints(rundir.model_dir(run_dir)):
        state = read_json(ckpt / "trainer_state.json")
        epoch, step = float(state["epoch"]), int(state["global_step"])
        if eval_epochs == "all" or round(epoch) in eval_epochs:
            out.append((epoch, step, ckpt))
    return out


def earlier_stages(run_dir: Path) -> list[tuple[int, float, int, Path]]:
    """(stage, epoch, step, model dir) of a staged run's earlier stages' final models (scored
    beside the run's own for forgetting); [] for a run without stages."""
    done = rundir.read_done(run_dir) or {}
    out = []
    for k in range(1, int(done.get("stages") or 0)):
        stage = rundir.stage_dir(run_dir, k)
        end = rundir.read_done(stage) or {}
        out.append((k, float(end["epoch"]), int(end["step"]), stage))
    return out


def formulations_to_score(formulation: str, grid: Grid) -> list[str]:
    """The formulations a cell's checkpoints are scored in: its own, then the grid's other
    ``eval_formulations``."""
    return [formulation, *(f for f in grid.eval_formulations if f != formulation)]


def score_model(
    model_dir,
    folder: Path,
    doit_dir: str,
    grid: Grid,
    chat_format=None,
    seed: int = 0,
    formulations=(LETTER,),
) -> dict[tuple[str, str], dict]:
    """{(split, formulation): scores.json} for one model, predicting only what is not yet
    scored (the model loads once, and only when something is missing; the grid's
    ``eval_batch_size`` and ``max_new_tokens``)."""
    from doit.eval.evaluate import Model, evaluate, output_paths

    model, out = Model(str(model_dir), chat_format=chat_format, seed=seed), {}
    for formulation in formulations:
        for split in SPLITS:
            _, path = output_paths(folder, split, formulation)
            if not path.is_file():
                evaluate(
                    model,
                    doit_dir,
                    split,
                    grid.max_new_tokens,
                    folder=folder,
                    batch_size=grid.eval_batch_size,
                    ood=split == "test",
                    formulation=formulation,
                    per_ability=grid.items_scored(split),
                )
                faults.point("mid_eval")
            out[(split, formulation)] = read_json(path)
    return out


def score_benchmarks(
    model_dir, folder: Path, benchmarks, cell_id: str, chat_format=None, seed: int = 0
) -> dict:
    """{split name: BENCH.json} for the benchmarks (`spec.Benchmark`) whose ``cells`` pattern
    matches the cell; ``chat_format`` and ``seed`` as `score_model` takes them (an untuned
    base has no chat template of its own)."""
    from doit.eval.public_bench import letter_tokens, make_lm, run_bench

    out, lm = {}, None
    for b in benchmarks:
        if not fnmatch.fnmatch(cell_id, b.cells):
            continue
        split = b.name if not b.shots else f"{b.name}-{b.shots}shot"
        path = folder / f"{split}.bench.json"
        if not path.is_file():
            lm = lm or make_lm(str(model_dir), chat_format=chat_format, seed=seed)
            result = run_bench(
                lm,
                b.data_dir,
                [b.name],
                [b.shots],
                model=str(model_dir),
                letter_tokens=letter_tokens(lm),
            )
            write_json(path, result)
        out[split] = read_json(path)
    return out


def benchmark_rows(split: str, bench: dict) -> list[dict]:
    rows = []
    for name, by_shots in bench["benchmarks"].items():
        for entry in by_shots.values():
            n = sum(s["n"] for s in entry["subjects"].values())
            rows.append(
                {
                    "split": split,
                    "ability": name,
                    "score": entry["macro"],
                    "n_items": n,
                    "chance": 25.0,
                    "formulation": LETTER,
                }
            )
    return rows


def score_rows(
    split: str, scores: dict, formulation: str = LETTER
) -> tuple[list[dict], list[dict]]:
    """(per-ability rows, per-item rows) of one split's scores.json in one formulation (cell
    keys added later)."""
    rows = [
        {
            "split": split,
            "ability": key,
            "score": e["score"],
            "n_items": e["n_items"],
            "chance": e["chance"],
            "eval_s": scores.get("eval_s"),
            "n_no_output": scores.get("n_no_output", {}).get(key, 0),
            "formulation": formulation,
        }
        for key, e in scores["abilities"].items()
    ]
    items = [
        {
            "split": split,
            "ability": r["ability"],
            "type": r["type"],
            "idx": r["idx"],
            "answer_kind": r["answer_kind"],
            "correct": bool(r["correct"]),
            "formulation": formulation,
            "cluster": r.get("cluster"),
        }
        for r in scores["items"]
    ]
    return rows, items
