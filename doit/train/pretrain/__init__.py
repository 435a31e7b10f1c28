"""Pretraining a base from scratch: Llama / ResFormer / SVFormer on a text corpus (the micro ladder).

    from doit.train.pretrain import parse_args, run
    result = run(parse_args(["--config", "recipes/configs/pretrain/xs.yaml", ...]))

`main` is the command (`recipes/pretrain.py` and `doit pretrain` call it). The pieces: `args`
(the run's arguments and their checks), `corpus` (documents -> packed blocks ->
`EpochPermutation`, the same block order for every architecture trained with one ``data_seed``,
a fresh one each epoch), `model` (config, seeded fresh model, parameter counts) and `trainer`
(the trainer, its metrics writer, the end of a run). The run directory (metrics.jsonl rows
"start", "train", "valid", "end"; DONE holding the "end" row) is `doit.train.rundir`'s; an
unfinished run starts again from scratch, a finished one (DONE) is read back, never redone.

The "start" and "end" rows describe the run: arch, size, seed, data_seed, ``params_total`` and
``params_non_embedding``, the unigram baseline (``unigram_entropy`` of the training tokens and
``unigram_valid_loss``, the valid tokens' cross-entropy under that add-one smoothed
distribution: what a model that ignores context would reach), block size, tokens per step; "end"
adds ``valid_loss``, ``train_loss`` and ``total_wall_s``.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from doit.train import rundir
from doit.train.errors import ConfigError
from doit.train.pretrain.args import (
    PretrainArguments,
    PretrainRecipeArgs,
    check_training_args,
    parse_args,
    resolve_paths,
)
from doit.train.pretrain.corpus import (
    BlockDataset,
    EpochPermutation,
    pack_documents,
    read_documents,
    unigram_baseline,
)
from doit.train.pretrain.model import build_model, model_config, parameter_counts
from doit.train.pretrain.trainer import PretrainMetrics, PretrainTrainer, build_trainer, finish
from doit.train.rundir import RunResult

log = logging.getLogger("doit.train.pretrain")


def main(argv: list[str] | None = None) -> int:
    """The command (`recipes/pretrain.py`, `doit pretrain`): parse, run; bad input exits 2."""
    from doit.io import OutputError
    from doit.train import launch

    logging.basicConfig(format="%(asctime)s %(name)s: %(message)s", level=logging.INFO)
    launch.exit_on_sigterm()  # the launcher stops the other ranks with SIGTERM: clean up anyway
    try:
        result = run(parse_args(argv))
    except (ConfigError, OutputError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    finally:
        launch.cleanup_shm()
    end = result.final
    print(
        f"{result.run_dir}: valid loss {end['valid_loss']:.4f}, "
        f"{end['tokens']} tokens, {end['wall_s']:.0f} s"
    )
    return 0


def run(args: PretrainRecipeArgs) -> RunResult:
    """Train one base. A finished run (DONE) is read back, not redone."""
    from doit.train import launch

    out = Path(args.training.output_dir)
    check_output_dir(args)
    if rundir.is_done(out):
        log.info("%s is finished (DONE); delete it to train again", out)
        return RunResult(out, rundir.read_done(out), trained=False)
    with launch.scoped_environment():
        trainer = build_trainer(args.model, args.training)
        trainer.train()
        return RunResult(out, finish(trainer))


def check_output_dir(args: PretrainRecipeArgs) -> None:
    """``output_dir`` under doit's one output rule (`doit.io.check_output`): never the corpus
    (``micro_dir``), a train/valid file, the tokenizer, a folder holding one or the current
    directory; an existing folder only when it is a pretraining run's or empty."""
    a = args.model
    inputs = {
        "the corpus (--micro_dir)": a.micro_dir,
        "the train file (--train_file)": a.train_file,
        "the valid file (--valid_file)": a.valid_file,
        "the tokenizer (--tokenizer_path)": a.tokenizer_path,
    }
    rundir.check_output_dir(args.training.output_dir, rundir.PRETRAINING_RUN, inputs)


__all__ = [
    "BlockDataset",
    "EpochPermutation",
    "PretrainArguments",
    "PretrainMetrics",
    "PretrainRecipeArgs",
    "PretrainTrainer",
    "build_model",
    "build_trainer",
    "check_output_dir",
    "check_training_args",
    "finish",
    "main",
    "model_config",
    "pack_documents",
    "parameter_counts",
    "parse_args",
    "read_documents",
    "resolve_paths",
    "run",
    "unigram_baseline",
]
