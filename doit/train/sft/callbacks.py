"""Trainer callbacks of fine-tuning: metrics.jsonl, the checkpoint policy, per-epoch progress.

Thin writers over `doit.train.rundir`, which owns the run directory and the metrics row schema.
- `MetricsJsonl` appends every log (training steps and per-epoch evaluation) to metrics.jsonl as
  a shared-schema row (``kind`` train, valid or summary; ``tokens`` = assistant tokens seen).
- `CheckpointPolicy` keeps one checkpoint per epoch but the optimiser state only in the newest:
  after each save, older checkpoints lose their optimiser, scheduler, scaler, RNG and DeepSpeed
  states (what ``save_only_model`` would have written). `doit.train.sft.finish` strips the last
  one once the run is done.
- `RecordOptimizerGroups` writes which parameter sits in which weight-decay group into
  run_info.json.
- `EpochProgress` replaces transformers' single progress bar by one bar per epoch and prints a
  summary line at the end.
"""

from __future__ import annotations

import math
import sys
import time

from transformers import PrinterCallback, ProgressCallback, TrainerCallback

from doit import faults
from doit.train import rundir
from doit.train.sft.trainer import assistant_tokens_seen


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
            rundir.update_run_info(args.output_dir, optimizer_groups=self.trainer.optimizer_groups)


class CheckpointPolicy(TrainerCallback):
    def on_save(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            for ckpt in rundir.checkpoints(args.output_dir)[:-1]:
                rundir.strip_training_state(ckpt)
        faults.point("after_checkpoint")


class MetricsJsonl(TrainerCallback):
    def __init__(self, output_dir):
        self.run_dir = output_dir
        self.session = 0
        self.start = time.perf_counter()

    def on_train_begin(self, args, state, control, **kwargs):
        self.start = time.perf_counter()
        if state.is_world_process_zero:
            self.session = rundir.start_metrics(self.run_dir, state.global_step or None)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not (state.is_world_process_zero and logs):
            return
        logs = name_eval_metrics(logs)
        kind = rundir.log_kind(logs)
        fields = {k: v for k, v in logs.items() if k not in rundir.SHARED_KEYS}
        tokens = assistant_tokens_seen(state.log_history)  # the trainer appended this log already
        epoch, wall_s = logs.get("epoch", state.epoch), time.perf_counter() - self.start
        row = rundir.metrics_row(
            kind, state.global_step, epoch, tokens, wall_s, session=self.session, **fields
        )
        rundir.append_metrics(self.run_dir, row)


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
