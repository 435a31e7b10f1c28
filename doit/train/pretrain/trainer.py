"""The pretraining trainer: `Trainer` with doit's optimiser groups and `EpochPermutation`'s data
order, its metrics.jsonl writer, and the end of a run (final evaluation, model, DONE)."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from transformers import Trainer, TrainerCallback

from doit.train import launch, rundir
from doit.train.optim import DoitOptimizerMixin
from doit.train.pretrain.args import PretrainArguments, check_training_args, resolve_paths
from doit.train.pretrain.corpus import EpochPermutation, load_corpus, unigram_baseline
from doit.train.pretrain.model import build_model, parameter_counts

log = logging.getLogger("doit.train.pretrain")


class PretrainMetrics(TrainerCallback):
    """Writes metrics.jsonl (`doit.train.rundir`'s rows) on the main process: a start row,
    train/valid rows, and (`finish`) the end row; ``tokens`` is steps x tokens per step."""

    def __init__(self, output_dir, meta: dict):
        self.run_dir = output_dir
        self.meta = meta
        self.rows: list[dict] = []
        self.start = time.perf_counter()

    def row(self, kind: str, state, **values) -> dict:
        step = state.global_step
        out = rundir.metrics_row(
            kind,
            step,
            state.epoch,
            step * self.meta["tokens_per_step"],
            time.perf_counter() - self.start,
            **values,
        )
        self.rows.append(out)
        if state.is_world_process_zero:
            rundir.append_metrics(self.run_dir, out)
        return out

    def on_train_begin(self, args, state, control, **kwargs):
        self.start = time.perf_counter()
        if state.is_world_process_zero:
            rundir.start_metrics(self.run_dir, resume_step=None)  # a run restarts from scratch
        self.row("start", state, **self.meta, max_steps=state.max_steps)

    def on_log(self, args, state, control, logs=None, **kwargs):
        logs = logs or {}
        if "loss" in logs:
            self.row(
                "train",
                state,
                loss=logs["loss"],
                learning_rate=logs.get("learning_rate"),
                grad_norm=logs.get("grad_norm"),
            )
        elif "eval_loss" in logs:
            self.row("valid", state, loss=logs["eval_loss"])

    def last(self, kind: str) -> dict | None:
        return next((r for r in reversed(self.rows) if r["kind"] == kind), None)


class PretrainTrainer(DoitOptimizerMixin, Trainer):
    """`Trainer` with doit's no-decay set (norms, biases, ResFormer mixing scalars) and the
    data order of `EpochPermutation`.

    ``optimizer_groups`` records, when the optimiser is built (before DeepSpeed wraps it), each
    group's weight decay and parameter names.
    """

    optimizer_groups: list[dict] | None = None
    started: float = 0.0

    def _get_train_sampler(self, train_dataset=None) -> EpochPermutation:
        dataset = train_dataset if train_dataset is not None else self.train_dataset
        return EpochPermutation(len(dataset), run_data_seed(self.args))

    @property
    def metrics_callback(self) -> PretrainMetrics:
        return next(c for c in self.callback_handler.callbacks if isinstance(c, PretrainMetrics))


def run_data_seed(training_args) -> int:
    t = training_args
    return t.data_seed if t.data_seed is not None else t.seed


def run_meta(args: PretrainArguments, training_args, model, data: dict) -> dict:
    t = training_args
    sequences = t.per_device_train_batch_size * t.gradient_accumulation_steps * t.world_size
    return {
        "arch": args.arch,
        "value_mode": args.value_mode,
        "size": args.size,
        "seed": t.seed,
        "data_seed": run_data_seed(t),
        **parameter_counts(model),
        **unigram_baseline(data["train"].blocks, data["valid"].blocks, model.config.vocab_size),
        "block_size": args.block_size,
        "tokens_per_step": sequences * args.block_size,
        "train_blocks": len(data["train"]),
        "valid_blocks": len(data["valid"]),
        "world_size": t.world_size,
    }


def build_trainer(args: PretrainArguments, training_args) -> PretrainTrainer:
    """Tokenizer, packed data, a fresh model and the trainer (with its metrics callback)."""
    from transformers import AutoTokenizer, default_data_collator

    check_training_args(training_args)
    start = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(str(resolve_paths(args)["tokenizer"]))
    data = load_corpus(args, tokenizer)
    model = build_model(args, tokenizer, training_args.seed)
    meta = run_meta(args, training_args, model, data)
    launch.forget_previous_accelerator()
    trainer = PretrainTrainer(
        model=model,
        args=training_args,
        train_dataset=data["train"],
        eval_dataset=data["valid"],
        data_collator=default_data_collator,
        processing_class=tokenizer,
        callbacks=[PretrainMetrics(training_args.output_dir, meta)],
    )
    trainer.started = start
    return trainer


def finish(trainer: PretrainTrainer) -> dict:
    """Final evaluation (unless the last step had one), model + tokenizer, end row, DONE."""
    metrics = trainer.metrics_callback
    if (metrics.last("valid") or {}).get("step") != trainer.state.global_step:
        trainer.evaluate()
    out = Path(trainer.args.output_dir)
    trainer.save_model(str(out))  # ZeRO-3: gathered (stage3_gather_16bit_weights_on_model_save)
    train = metrics.last("train") or {}
    valid_loss = metrics.last("valid")["loss"]
    end = metrics.row(
        "end",
        trainer.state,
        **metrics.meta,
        valid_loss=valid_loss,
        train_loss=train.get("loss"),
        total_wall_s=round(time.perf_counter() - trainer.started, 3),
        versions=rundir.versions(),  # a base pretrained on another install is another base
    )
    if trainer.is_world_process_zero():
        rundir.write_done(out, end)
    log.info("%s: valid loss %.4f after %d tokens", out, end["valid_loss"], end["tokens"])
    return end
