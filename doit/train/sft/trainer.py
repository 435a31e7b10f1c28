"""`DoitSFTTrainer`: TRL's `SFTTrainer` with doit's optimiser groups and token accounting.

Nothing about the training loop changes. `DoitOptimizerMixin` supplies the no-decay set (norms,
biases, ResFormer mixing scalars); `create_optimizer` also records which parameter went to which
group (for run_info.json). Each training log gains, summed over ranks since the last log:
``seconds`` (wall time, evaluation and checkpointing excluded), ``nonpad_tokens``,
``assistant_tokens`` (tokens in the loss), ``assistant_tokens_seen`` (running total, kept across
resumes through the log history), ``tokens_per_second``, ``assistant_tokens_per_second`` and
``padding_fraction`` (padding slots over all slots of the batches).
"""

from __future__ import annotations

import time

import torch
from trl import SFTTrainer

from doit.train.optim import DoitOptimizerMixin


class DoitSFTTrainer(DoitOptimizerMixin, SFTTrainer):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.optimizer_groups: list[dict] = []
        self._counts = torch.zeros(3, dtype=torch.float64)  # trained, non-padding, all slots
        self._clock: float | None = None
        self._paused = 0.0
        self._evaluating = 0  # evaluate() recurses once per eval dataset

    def create_scheduler(self, num_training_steps: int, optimizer=None):
        # Under DeepSpeed the optimiser is DeepSpeed's ZeRO wrapper, which lacks `defaults`;
        # transformers' polynomial schedule reads the peak lr from `optimizer.defaults["lr"]`.
        zero = getattr(optimizer if optimizer is not None else self.optimizer, "optimizer", None)
        if zero is not None and not hasattr(zero, "defaults") and hasattr(zero, "optimizer"):
            zero.defaults = zero.optimizer.defaults
        return super().create_scheduler(num_training_steps, optimizer)

    def training_step(self, model, inputs, num_items_in_batch=None):
        if self._clock is None:
            self._clock = time.perf_counter()
        labels = inputs["labels"]
        mask = inputs.get("attention_mask")
        real = mask.sum() if mask is not None else labels.numel()
        step = torch.tensor(
            [float((labels[..., 1:] != -100).sum()), float(real), float(labels.numel())],
            dtype=torch.float64,
        )
        self._counts += step
        return super().training_step(model, inputs, num_items_in_batch)

    def evaluate(self, *args, **kwargs):
        start, self._evaluating = time.perf_counter(), self._evaluating + 1
        try:
            return super().evaluate(*args, **kwargs)
        finally:
            self._evaluating -= 1
            if not self._evaluating:
                self._paused += time.perf_counter() - start

    def _save_checkpoint(self, model, trial):
        start = time.perf_counter()
        try:
            return super()._save_checkpoint(model, trial)
        finally:
            self._paused += time.perf_counter() - start

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        if "loss" in logs and self._clock is not None:
            logs.update(self._throughput())
        super().log(logs, start_time)

    def _throughput(self) -> dict[str, float]:
        counts = self.accelerator.reduce(self._counts.to(self.args.device), reduction="sum").cpu()
        trained, real, slots = (float(x) for x in counts)
        now = time.perf_counter()
        seconds = max(now - self._clock - self._paused, 1e-9)
        self._counts.zero_()
        self._clock, self._paused = now, 0.0
        return {
            "seconds": seconds,
            "nonpad_tokens": real,
            "assistant_tokens": trained,
            "assistant_tokens_seen": assistant_tokens_seen(self.state.log_history) + trained,
            "tokens_per_second": real / seconds,
            "assistant_tokens_per_second": trained / seconds,
            "padding_fraction": 1.0 - real / slots if slots else 0.0,
        }


def assistant_tokens_seen(log_history: list[dict]) -> float:
    """The running total of trained (assistant) tokens in the newest log that has one."""
    for entry in reversed(log_history):
        if "assistant_tokens_seen" in entry:
            return float(entry["assistant_tokens_seen"])
    return 0.0
