"""Trainer callbacks of the SFT recipe: metrics.jsonl, the checkpoint policy, per-epoch progress.

- `MetricsJsonl` appends every log (training steps and per-epoch evaluation) to
  ``<output_dir>/metrics.jsonl``, one JSON object a line with ``session`` (0 for the first
  start, +1 per resume), ``step`` and ``epoch``. On resume, lines past the checkpoint's step
  (logged by the killed run) are dropped first, so each step appears once.
- `CheckpointPolicy` keeps one checkpoint per epoch but the optimiser state only in the newest:
  after each save, older checkpoints lose their optimiser, scheduler, scaler, RNG and DeepSpeed
  states (what ``save_only_model`` would have written). `doit.train.run.finish` strips the last
  one once the run is done.
- `EpochProgress` replaces transformers' single progress bar by one bar per epoch and prints a
  summary line at the end.
"""

from __future__ import annotations

import json
import math
import shutil
import sys
import time
from pathlib import Path

from transformers import PrinterCallback, ProgressCallback, TrainerCallback
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from doit.data.io import atomic_write_text, dumps_jsonl, read_jsonl

METRICS = "metrics.jsonl"
STATE_FILES = (
    "optimizer.pt",
    "scheduler.pt",
    "scaler.pt",
    "latest",
    "zero_to_fp32.py",
    "zero_to_torch.py",
)


def checkpoints(output_dir) -> list[Path]:
    """``checkpoint-<step>`` folders, oldest first."""
    found = []
    for p in Path(output_dir).glob(f"{PREFIX_CHECKPOINT_DIR}-*"):
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


def install(trainer, steps_per_epoch: int) -> None:
    """The recipe's callbacks on ``trainer``, in place of transformers' progress bar."""
    trainer.remove_callback(ProgressCallback)
    trainer.remove_callback(PrinterCallback)
    for cb in (
        MetricsJsonl(trainer.args.output_dir),
        CheckpointPolicy(),
        RecordOptimizerGroups(trainer),
        EpochProgress(steps_per_epoch),
    ):
        trainer.add_callback(cb)


class RecordOptimizerGroups(TrainerCallback):
    """Writes which parameter sits in which weight-decay group into run_info.json."""

    def __init__(self, trainer):
        self.trainer = trainer

    def on_train_begin(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            from doit.train.run import update_run_info

            update_run_info(args.output_dir, optimizer_groups=self.trainer.optimizer_groups)


class CheckpointPolicy(TrainerCallback):
    def on_save(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            for ckpt in checkpoints(args.output_dir)[:-1]:
                strip_training_state(ckpt)


class MetricsJsonl(TrainerCallback):
    def __init__(self, output_dir):
        self.path = Path(output_dir) / METRICS
        self.session = 0

    def on_train_begin(self, args, state, control, **kwargs):
        if not state.is_world_process_zero or not self.path.is_file():
            return
        rows = _read_rows(self.path)  # a killed run may have left a partial last line
        kept = [r for r in rows if r["step"] <= state.global_step]
        self.session = 1 + max((r.get("session", 0) for r in rows), default=-1)
        atomic_write_text(self.path, dumps_jsonl(kept))

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_world_process_zero and logs:
            row = {"session": self.session, "step": state.global_step, "epoch": state.epoch}
            row.update(name_eval_metrics(logs))
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")


def _read_rows(path: Path) -> list[dict]:
    return [row for _, row in read_jsonl(path, on_error="skip")]


def name_eval_metrics(logs: dict) -> dict:
    """TRL logs its per-call eval metrics unprefixed (``eval_entropy``) next to one eval set's
    ``eval_<name>_loss``: give them the set's name and drop TRL's train-token counter."""
    names = [k[5:-5] for k in logs if k.startswith("eval_") and k.endswith("_loss")]
    if len(names) != 1 or not names[0]:
        return dict(logs)
    out = {k: v for k, v in logs.items() if k != "eval_num_tokens"}
    for key in ("entropy", "mean_token_accuracy"):
        if f"eval_{key}" in out:
            out[f"eval_{names[0]}_{key}"] = out.pop(f"eval_{key}")
    return out


class EpochProgress(TrainerCallback):
    """One tqdm bar per epoch (main process only) and a closing summary line."""

    def __init__(self, steps_per_epoch: int):
        self.steps_per_epoch = steps_per_epoch
        self.bar = None
        self.last: dict = {}
        self.valid: dict = {}
        self.start = time.time()

    def on_epoch_begin(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        from tqdm.auto import tqdm

        epoch = int(round(state.epoch or 0))
        done_in_epoch = state.global_step - epoch * self.steps_per_epoch
        total = min(self.steps_per_epoch, state.max_steps - epoch * self.steps_per_epoch)
        epochs = math.ceil(state.max_steps / self.steps_per_epoch)
        self.bar = tqdm(
            total=total,
            initial=max(done_in_epoch, 0),
            desc=f"epoch {epoch + 1}/{epochs}",
            dynamic_ncols=True,
            file=sys.stderr,
        )

    def on_step_end(self, args, state, control, **kwargs):
        if self.bar is not None:
            self.bar.update(1)

    def on_log(self, args, state, control, logs=None, **kwargs):
        logs = logs or {}
        if "loss" in logs:
            self.last = logs
            if self.bar is not None:
                self.bar.set_postfix(loss=f"{logs['loss']:.4g}", refresh=False)
        self.valid.update(
            {k: v for k, v in logs.items() if k.startswith("eval_") and k.endswith("_loss")}
        )

    def on_epoch_end(self, args, state, control, **kwargs):
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def on_train_end(self, args, state, control, **kwargs):
        if self.bar is not None:
            self.bar.close()
        if state.is_world_process_zero:
            print(summary_line(state, self.last, self.valid, time.time() - self.start), flush=True)


def summary_line(state, last: dict, valid: dict, seconds: float) -> str:
    parts = [f"doit sft: {state.global_step}/{state.max_steps} steps, epoch {state.epoch or 0:.2f}"]
    if "loss" in last:
        parts.append(f"train loss {last['loss']:.4g}")
    if valid:
        parts.append(f"valid loss {sum(valid.values()) / len(valid):.4g} (mean of {len(valid)})")
    if "assistant_tokens_seen" in last:
        parts.append(f"{last['assistant_tokens_seen']:.0f} assistant tokens")
    if "assistant_tokens_per_second" in last:
        parts.append(f"{last['assistant_tokens_per_second']:.0f} assistant tok/s")
    parts.append(f"{seconds:.0f}s")
    return " | ".join(parts)
