"""The run directory of a training run (fine-tuning or pretraining): the one owner of its layout.

```
<output_dir>/
  run_info.json        fine-tuning: resolved config, launch, schedule, data provenance, versions,
                       git commit, model description, optimiser groups; one entry per session
  metrics.jsonl        one JSON object a line, the row schema below
  checkpoint-<step>/   fine-tuning: one per epoch; only the newest keeps optimiser state while
                       training, none once the run is done
  model.safetensors, config.json, tokenizer files   the final model (LoRA: merged) + tokenizer
  adapter/             LoRA/QLoRA runs: the adapter itself
  DONE                 JSON, written last: the run's "end" row. A run with DONE is never redone
```

A **staged** fine-tuning run (a staged mix, `doit.train.sft.stages`) holds one such run dir per
stage, ``stages/<k>/``, each trained from the one before's final model, and at its top
run_info.json (``staged``: the stages, ``config``, ``data`` summed over the stages),
metrics.jsonl (its one "end" row) and DONE: the last stage's "end" row with ``tokens`` and
``wall_s`` summed over the stages, ``stages`` (how many) and ``model_dir`` ("stages/<K>"): where
its final model and checkpoints lie (`model_dir`; an ordinary run's are its own folder).

metrics.jsonl rows (`metrics_row`) open with the same five keys, then the metric fields:
``kind`` ("start" | "train" | "valid" | "summary" | "end"), ``step`` (optimiser steps done),
``epoch`` (float, or None where the trainer has none yet), ``tokens`` (tokens the loss has
covered so far: fine-tuning's assistant tokens, pretraining's every block token), ``wall_s``
(seconds since this session started). "train" rows carry ``loss``, ``learning_rate``,
``grad_norm``; "valid" rows ``loss`` (pretraining) or ``eval_<ability>_loss`` (fine-tuning, one
per ability); "summary" is the trainer's closing log (``train_runtime``...); "start" and "end"
carry the run's description (pretraining: arch, size, seed, parameter counts, unigram baseline;
"end" also the final valid loss, ``total_wall_s`` and ``versions``, the libraries it ran on:
the same recipe on another install gives another base, studies/seed_noise_micro). Fine-tuning
rows also carry ``session`` (0 for the first start, +1 per resume); on resume, rows past the
checkpoint's step are dropped.

A killed fine-tuning run resumes from its newest complete checkpoint, and only the run that
wrote it: before anything is written to the folder (`doit.train.sft.check_resume`), the keys of
run_info.json's ``config`` that decide the result (`doit.train.sft.args.resume_identity`: the
grid's `training_identity`, less what a session may change: output_dir, logging, reporting,
dataloader workers, the launch's own keys) and its training items' hash (``data``'s
``train_items_sha256``) must equal the new run's; otherwise the run is refused, naming the keys
that differ (a ConfigError: exit 2), and the folder is left as it was.

Older run directories are read as they are (`read_metrics`, `read_done`): fine-tuning rows
written before the shared schema had no ``kind``, ``tokens`` or ``wall_s`` (the kind is inferred
from their keys, ``tokens`` from ``assistant_tokens_seen``, and their per-log ``tokens`` count is
today's ``nonpad_tokens``); pretraining rows had no ``epoch`` and named ``learning_rate`` ``lr``;
a fine-tuning DONE held only ``finished``, ``global_step`` and ``epoch``.
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from doit.io import (
    OutputKind,
    atomic_write_text,
    check_output,
    dumps_jsonl,
    read_json,
    read_jsonl,
    write_json,
)

DONE = "DONE"
RUN_INFO = "run_info.json"
METRICS = "metrics.jsonl"
BASE_IDENTITY = "doit_base.json"  # the grid runner's record of what built a base, written first
CHECKPOINT_PREFIX = "checkpoint"
STAGES = "stages"  # a staged run's stage run dirs: stages/<k>/
KINDS = ("start", "train", "valid", "summary", "end")
SHARED_KEYS = ("kind", "step", "epoch", "tokens", "wall_s")
STATE_FILES = (
    "optimizer.pt",
    "scheduler.pt",
    "scaler.pt",
    "latest",
    "zero_to_fp32.py",
    "zero_to_torch.py",
)
LIBRARIES = (
    "torch",
    "transformers",
    "trl",
    "peft",
    "accelerate",
    "deepspeed",
    "datasets",
    "tokenizers",
    "bitsandbytes",
    "doit-scaling",
)


@dataclass
class RunResult:
    """What a finished run left: its directory, its "end" row (DONE), its epoch checkpoints."""

    run_dir: Path
    final: dict
    checkpoints: list[Path] = field(default_factory=list)
    trained: bool = True  # False: the run was already DONE and was read back


# --- what an existing output_dir must hold to be written again (`doit.io.check_output`) --------
def is_pretraining_run(run_dir) -> bool:
    """A pretraining run's folder: DONE, the grid runner's record of the base it builds, or a
    metrics.jsonl that is empty or opens with a pretraining "start" row (a run restarts)."""
    run_dir = Path(run_dir)
    if (run_dir / DONE).is_file() or (run_dir / BASE_IDENTITY).is_file():
        return True
    if not (run_dir / METRICS).is_file():
        return False
    try:
        rows = [r for _, r in read_jsonl(run_dir / METRICS, on_error="skip")]
    except (OSError, ValueError):  # unreadable, or not UTF-8 (`doit.io.EncodingError`)
        return False
    return not rows or isinstance(rows[0], dict) and rows[0].get("kind") == "start"


FINE_TUNING_RUN = OutputKind(
    "fine-tuning run",
    holds=lambda path: (path / RUN_INFO).is_file(),
    marker=f"no {RUN_INFO}",
)
PRETRAINING_RUN = OutputKind(
    "pretraining run", holds=is_pretraining_run, marker=f"no {DONE} and no {METRICS} of a run"
)


def check_output_dir(output_dir, kind: OutputKind, inputs: dict) -> None:
    """A training command's ``--output_dir`` under doit's one output rule
    (`doit.io.check_output`), ``inputs`` being what the command reads, by name; a run dir is
    resumed or read back, never overwritten, so there is no ``--overwrite``."""
    check_output(output_dir, kind, inputs=inputs, flag="--output_dir", overwrite_flag=None)


# --- metrics.jsonl ---------------------------------------------------------------------------------
def metrics_row(kind: str, step: int, epoch, tokens, wall_s: float, **fields) -> dict:
    """A metrics.jsonl row: the five shared keys first, then ``fields``."""
    if kind not in KINDS:
        raise ValueError(f"metrics row kind {kind!r}: expected one of {', '.join(KINDS)}")
    return {
        "kind": kind,
        "step": step,
        "epoch": epoch,
        "tokens": tokens,
        "wall_s": round(wall_s, 3),
        **fields,
    }


def append_metrics(run_dir, row: dict) -> None:
    with (Path(run_dir) / METRICS).open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def start_metrics(run_dir, resume_step: int | None) -> int:
    """Prepare metrics.jsonl for a session; returns the session number. A fresh run
    (``resume_step`` None) starts an empty file; a resumed one keeps the rows up to its
    checkpoint's step (a killed run may have left later rows, or a cut last line)."""
    path = Path(run_dir) / METRICS
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = read_metrics(run_dir) if path.is_file() else []
    kept = [] if resume_step is None else [r for r in rows if r["step"] <= resume_step]
    atomic_write_text(path, dumps_jsonl(kept))
    return 1 + max((r.get("session", 0) for r in rows), default=-1) if kept else 0


def read_metrics(run_dir) -> list[dict]:
    """Every row of ``run_dir``'s metrics.jsonl in the shared schema (older layouts upgraded);
    a cut last line (a killed run) is passed over."""
    path = Path(run_dir) / METRICS
    return [upgrade_row(r) for _, r in read_jsonl(path, on_error="skip")]


def upgrade_row(row: dict) -> dict:
    """A row of an older layout in the shared schema (rows already in it are returned as is)."""
    if "kind" in row and "epoch" in row and "tokens" in row and "wall_s" in row:
        return row
    renamed = {"lr": "learning_rate"} if "kind" in row else {"tokens": "nonpad_tokens"}
    rest = {renamed.get(k, k): v for k, v in row.items() if k not in SHARED_KEYS or k in renamed}
    tokens = row.get("tokens") if "kind" in row else row.get("assistant_tokens_seen")
    return metrics_row(
        row.get("kind") or log_kind(row),
        row.get("step", 0),
        row.get("epoch"),
        tokens,
        row.get("wall_s", 0.0),
        **rest,
    )


def log_kind(logs: dict) -> str:
    """The kind of a trainer log: "train" (it has a loss), "valid" (eval_* metrics) or
    "summary" (the trainer's closing log)."""
    if "loss" in logs:
        return "train"
    if any(k.startswith("eval_") for k in logs):
        return "valid"
    return "summary"


# --- DONE ------------------------------------------------------------------------------------------
def is_done(run_dir) -> bool:
    return (Path(run_dir) / DONE).is_file()


def write_done(run_dir, end_row: dict) -> None:
    """Mark the run finished: DONE holds its "end" row (with the time it finished)."""
    write_json(Path(run_dir) / DONE, {**end_row, "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z")})


def read_done(run_dir) -> dict | None:
    """The DONE payload (an older fine-tuning DONE gains ``step`` from its ``global_step``)."""
    path = Path(run_dir) / DONE
    if not path.is_file():
        return None
    done = read_json(path)
    if "step" not in done and "global_step" in done:
        done["step"] = done["global_step"]
    return done


def stage_dir(run_dir, k: int) -> Path:
    """A staged run's stage ``k`` (1-based): an ordinary run dir."""
    return Path(run_dir) / STAGES / str(k)


def model_dir(run_dir) -> Path:
    """Where a finished run's final model (and its epoch checkpoints) lie: its own folder, or a
    staged run's last stage (DONE's ``model_dir``)."""
    done = read_done(run_dir) or {}
    return Path(run_dir) / done.get("model_dir", ".")


# --- checkpoints -----------------------------------------------------------------------------------
def checkpoints(run_dir) -> list[Path]:
    """``checkpoint-<step>`` folders, oldest first."""
    found = []
    for p in Path(run_dir).glob(f"{CHECKPOINT_PREFIX}-*"):
        step = p.name.rsplit("-", 1)[-1]
        if p.is_dir() and step.isdigit():
            found.append((int(step), p))
    return [p for _, p in sorted(found)]


def has_training_state(ckpt: Path) -> bool:
    return (ckpt / "optimizer.pt").is_file() or any(ckpt.glob("global_step*"))


def strip_training_state(ckpt: Path) -> None:
    """Leave model weights, tokenizer and trainer_state.json; drop what only resuming needs."""
    for name in STATE_FILES:
        (ckpt / name).unlink(missing_ok=True)
    for p in ckpt.glob("rng_state*.pth"):
        p.unlink(missing_ok=True)
    for p in ckpt.glob("global_step*"):
        shutil.rmtree(p, ignore_errors=True)


def strip_all(run_dir) -> None:
    for ckpt in checkpoints(run_dir):
        strip_training_state(ckpt)


def resumable(run_dir) -> Path | None:
    """The newest checkpoint a run could resume from (complete: trainer_state.json, and still
    holding its training state), or None."""
    found = [c for c in checkpoints(run_dir) if (c / "trainer_state.json").is_file()]
    found = [c for c in found if has_training_state(c)]
    return found[-1] if found else None


def resume_checkpoint(run_dir, is_main: bool) -> str | None:
    """The newest checkpoint to resume from, or None for a fresh start. A checkpoint folder
    without trainer_state.json (killed mid-save) is removed first (by the main process). That
    the checkpoint is this run's is the recipe's check, made earlier (`doit.train.sft`)."""
    if is_main:
        for partial in checkpoints(run_dir):
            if not (partial / "trainer_state.json").is_file():
                shutil.rmtree(partial, ignore_errors=True)
    ckpt = resumable(run_dir)
    return str(ckpt) if ckpt else None


# --- run_info.json ---------------------------------------------------------------------------------
def versions() -> dict[str, str | None]:
    out = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_state() -> dict:
    repo = Path(__file__).resolve().parents[2]

    def git(*cmd):
        return subprocess.run(
            ["git", "-C", str(repo), *cmd], capture_output=True, text=True, timeout=30
        )

    try:
        head = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.TimeoutExpired):
        return {"commit": None, "dirty": None}
    if head.returncode:
        return {"commit": None, "dirty": None}
    return {"commit": head.stdout.strip(), "dirty": bool(dirty.stdout.strip())}


def write_run_info(run_dir, info: dict) -> dict:
    """Write run_info.json from ``info`` (its ``started`` and ``launch`` open a new entry of
    ``sessions``, the earlier sessions kept), with the library versions and git state."""
    path = Path(run_dir) / RUN_INFO
    sessions = read_run_info(run_dir).get("sessions", []) if path.is_file() else []
    info = {**info, "versions": versions(), "git": git_state()}
    info["sessions"] = [*sessions, {"started": info["started"], "launch": info.get("launch")}]
    write_json(path, info)
    return info


def read_run_info(run_dir) -> dict:
    return read_json(Path(run_dir) / RUN_INFO)


def update_run_info(run_dir, **fields) -> None:
    write_json(Path(run_dir) / RUN_INFO, {**read_run_info(run_dir), **fields})
