"""Supervised fine-tuning as a library call: ``run(parse_args(argv)) -> RunResult``.

    from doit.train.sft import parse_args, run
    result = run(parse_args(["--config", "recipes/configs/sft/micro/full.yaml", ...]))

The pieces: `args` (the recipe's arguments and their checks), `data` (items -> tokenised
conversations with assistant-only labels), `model` (the base and its tokenizer, LoRA configs),
`trainer` and `callbacks` (TRL's SFTTrainer with doit's optimiser groups and metrics rows).

`main` is the command (`recipes/sft.py` and `doit sft` call it). ``run`` may be called many
times in one process (the study runner trains many micro cells so): each call resets
accelerate's state, adds no log handler twice and restores ``os.environ`` on return. The run
directory's layout is `doit.train.rundir`'s; a finished run (DONE) is read back, never redone, if
it is the same run (`check_finished`); a killed one resumes from its last checkpoint only if that checkpoint is of the same run
(`check_resume`, before anything is written there).
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

from doit.train import rundir
from doit.train.rundir import RunResult
from doit.train.sft.args import parse_args

log = logging.getLogger("doit.train")


def main(argv: list[str] | None = None) -> int:
    """The command (`recipes/sft.py`, `doit sft`): parse, run; a bad config exits 2."""
    from doit.io import OutputError
    from doit.train import launch
    from doit.train.errors import ConfigError

    launch.exit_on_sigterm()  # so that `finally` below runs when a launcher stops this rank
    try:
        run(parse_args(argv))
        return 0
    except (ConfigError, OutputError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    finally:
        launch.cleanup_shm()


def run(args) -> RunResult:
    """Train one cell described by parsed recipe arguments (`doit.train.sft.args.parse_args`);
    a staged mix trains stage by stage (`doit.train.sft.stages`)."""
    from doit.train import launch
    from doit.train.sft import stages

    spec = stages.staged_mix(args)
    if spec is not None:
        return _run_stages(args, spec)
    with launch.scoped_environment():
        return _run(args)


def _run_stages(args, spec) -> RunResult:
    """A staged mix's stages in order, each a `run` from the one before's final model
    (`doit.train.sft.stages`); the staged record written around them."""
    from doit.train.sft import stages

    out, main = Path(args.training.output_dir), args.training.process_index == 0
    check_output_dir(args)  # the staged folder against the recipe's own inputs, first
    info = rundir.read_run_info(out) if (out / rundir.RUN_INFO).is_file() else None
    stages.check_staged(args, out, identity_differences(info, args, None, True) if info else [])
    started, base, results = time.perf_counter(), args.model.model_name_or_path, []
    finished = rundir.is_done(out)  # a rerun: every stage is read back, the record kept
    if main and not finished:
        stages.write_staged_info(args, spec)
    for k, stage in enumerate(spec.stages, 1):
        results.append(run(parse_args(stages.stage_argv(args, k, stage, base))))
        base = rundir.model_dir(results[-1].run_dir)
    if finished:
        return RunResult(out, rundir.read_done(out), results[-1].checkpoints, trained=False)
    end = stages.staged_end(results, len(spec.stages), time.perf_counter() - started)
    if main:
        stages.finish_staged(out, results, end)
    return RunResult(out, end, results[-1].checkpoints)


def _run(args) -> RunResult:
    from doit.train import launch
    from doit.train.sft import callbacks, data, model
    from doit.train.sft.args import resolve_schedule
    from doit.train.sft.trainer import DoitSFTTrainer

    t = args.training
    out = Path(t.output_dir)
    main = t.process_index == 0
    setup_logging(main)
    check_output_dir(args)  # before a finished run is read back: DONE may be another's
    if rundir.is_done(out):
        check_finished(args)  # a finished run is read back only if it is this run
        log.info("%s is finished (DONE); delete DONE to train again", out)
        if main:
            rundir.strip_all(out)  # in case the finished run was killed before it could
        return RunResult(out, rundir.read_done(out), rundir.checkpoints(out), trained=False)
    check_resume(args)  # before anything is loaded or written: another run is never resumed
    started = time.perf_counter()
    tokenizer = model.load_base_tokenizer(args)
    train_data = data.build(args, tokenizer)
    schedule = resolve_schedule(args, len(train_data.train))
    check_resume(args, train_data.info["train_items_sha256"])  # before run_info.json is rewritten
    log.info("schedule: %s", schedule)
    if main:
        write_run_info(args, schedule, train_data.info)
    base = model.load_base_model(args, tokenizer)
    # The labels already carry the assistant mask (doit.train.sft.data); TRL checks it on raw text only.
    t.assistant_only_loss = False
    launch.forget_previous_accelerator()
    trainer = DoitSFTTrainer(
        model=base,
        args=t,
        train_dataset=train_data.train,
        eval_dataset=train_data.valid if t.eval_strategy.value != "no" else None,
        processing_class=tokenizer,
        peft_config=model.peft_config(args, tokenizer, base),
    )
    callbacks.install(trainer, schedule["steps_per_epoch"])
    if main:
        rundir.update_run_info(out, model=model.describe(trainer.model, args))
    resume = rundir.resume_checkpoint(out, is_main=main)
    if resume:
        log.info("resuming from %s", resume)
    trainer.train(resume_from_checkpoint=resume)
    final = finish(trainer, args, tokenizer, time.perf_counter() - started)
    trainer.end()
    return RunResult(out, final, rundir.checkpoints(out))


def check_output_dir(args) -> None:
    """``output_dir`` under doit's one output rule (`doit.io.check_output`): never the base,
    the corpus, the cell or mix drawn from, a folder holding one or the current directory; an
    existing folder only when it is a fine-tuning run's (its run_info.json: then
    `check_resume` decides) or empty. There is no overwrite: give another folder."""
    d = args.data
    inputs = {
        "the base (--model_name_or_path)": args.model.model_name_or_path,
        "the corpus (--doit_dir)": d.doit_dir,
        "the cell (--subset_dir)": d.subset_dir,
        "the mix (--mix)": d.mix,
    }
    rundir.check_output_dir(args.training.output_dir, rundir.FINE_TUNING_RUN, inputs)


def check_resume(args, train_sha: str | None = None) -> None:
    """Refuse to resume a checkpoint another run wrote: when ``output_dir`` holds a resumable
    checkpoint, the keys that decide the result (`resume_identity`) and, given ``train_sha``,
    the training items' hash must equal what its run_info.json recorded. A ConfigError names
    what differs; a crash-resume of the same run passes. Without ``train_sha`` (the check
    made before the data is drawn) the epochs are not compared: `resolve_schedule` may raise
    them (``min_steps``) before run_info.json records them."""
    from doit.train.errors import ConfigError

    out = Path(args.training.output_dir)
    ckpt = rundir.resumable(out)
    if ckpt is None:
        return
    if not (out / rundir.RUN_INFO).is_file():
        raise ConfigError(
            "output_dir",
            f"{out} holds {ckpt.name} but no {rundir.RUN_INFO}, so "
            "which run wrote it is unknown; give another output_dir",
        )
    differ = identity_differences(rundir.read_run_info(out), args, train_sha)
    if differ:
        raise ConfigError(
            "output_dir",
            f"{out} holds {ckpt.name} of another run (differs in: "
            f"{', '.join(differ)}); give another output_dir, or delete it to "
            "start over",
        )


def check_finished(args) -> None:
    """Refuse to read back a finished run (DONE) that another config or other data made: the
    same comparison as `check_resume`, the schedule resolved over the run's recorded number
    of training sequences and the training items drawn (not tokenised) for their hash."""
    from doit.train.errors import ConfigError
    from doit.train.sft.args import resolve_schedule
    from doit.train.sft.data import items_sha256, train_items

    out = Path(args.training.output_dir)
    if not (out / rundir.RUN_INFO).is_file():
        raise ConfigError(
            "output_dir",
            f"{out} is finished (DONE) but holds no {rundir.RUN_INFO}, so which run "
            "wrote it is unknown; give another output_dir",
        )
    info = rundir.read_run_info(out)
    sequences = info.get("schedule", {}).get("train_sequences")
    if sequences:
        resolve_schedule(args, sequences)
    differ = identity_differences(info, args, None, epochs=True)  # before the draw: it may fail
    differ = differ or identity_differences(info, args, items_sha256(train_items(args.data)))
    if differ:
        raise ConfigError(
            "output_dir",
            f"{out} holds a finished run of another config (differs in: "
            f"{', '.join(differ)}); give another output_dir, or delete it to train again",
        )


def identity_differences(
    info: dict, args, train_sha: str | None, epochs: bool | None = None
) -> list[str]:
    """The `resume_identity` keys in which ``args`` differ from the run ``info``
    (run_info.json) records, the formulation's default (letter) filled in on both sides;
    with ``train_sha``, also the training items' hash when no key explains a change of it.
    The epochs are compared when ``epochs`` says so, by default with ``train_sha`` only
    (`check_resume` says why)."""
    from doit.data import kinds as ak
    from doit.train.sft.args import resume_identity

    old, new = resume_identity(info.get("config", {})), resume_identity(args.to_dict())
    for identity in (old, new):
        identity.setdefault("formulation", ak.LETTER)
    epochs = bool(train_sha) if epochs is None else epochs
    keys = (old.keys() & new.keys()) - (set() if epochs else {"num_train_epochs"})
    differ = sorted(k for k in keys if old[k] != new[k])
    recorded = info.get("data", {}).get("train_items_sha256")
    if train_sha and recorded and recorded != train_sha and not differ:
        differ.append("the training data (train_items_sha256)")
    return differ


def write_run_info(args, schedule: dict, data_info: dict) -> dict:
    """run_info.json, written by the main process before the model loads (again on a resume)."""
    from doit.data.manifest import data_hash

    info = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "argv": args.argv,
        "launch": args.launch,
        "schedule": schedule,
        "data": {**data_info, "source_data_hash": data_hash(data_info["source"])},
        "config": args.to_dict(),
    }
    return rundir.write_run_info(args.training.output_dir, info)


def finish(trainer, args, tokenizer, wall_s: float) -> dict:
    """Save the final model and tokenizer, the "end" row and DONE, then drop the last optimiser
    state. Returns the "end" row."""
    from doit.train.sft.model import merge_adapter
    from doit.train.sft.trainer import assistant_tokens_seen

    out = Path(args.training.output_dir)
    peft = args.model.use_peft
    trainer.save_model(str(out / "adapter") if peft else str(out))  # every rank (ZeRO-3 gathers)
    state = trainer.state
    losses = [r["loss"] for r in state.log_history if "loss" in r]
    last = [r for r in state.log_history if r.get("step") == state.global_step]
    valid = {
        k: v for r in last for k, v in r.items() if k.startswith("eval_") and k.endswith("_loss")
    }
    tokens = assistant_tokens_seen(state.log_history)
    end = rundir.metrics_row(
        "end",
        state.global_step,
        state.epoch,
        tokens,
        wall_s,
        train_loss=losses[-1] if losses else None,
        **valid,
    )
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(str(out))
        if peft and args.run.merge_lora:
            merge_adapter(args, tokenizer, str(out / "adapter"), str(out))
        rundir.append_metrics(out, end)
        rundir.write_done(out, end)
        rundir.strip_all(out)
    trainer.accelerator.wait_for_everyone()  # no rank leaves while another still writes
    return end


class _StderrHandler(logging.StreamHandler):
    """Writes to ``sys.stderr`` as it is at each line, not as it was when the handler was made
    (a later run of the same process may have it redirected, or a test's capture closed)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):  # StreamHandler.__init__ sets it; the property ignores that
        pass


def setup_logging(is_main: bool) -> None:
    """doit's log lines on stderr, added once however many runs one process makes."""
    import transformers

    logger = logging.getLogger("doit")
    if not any(getattr(h, "_doit", False) for h in logger.handlers):
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("doit: %(message)s"))
        handler._doit = True
        logger.addHandler(handler)
    logger.setLevel(logging.INFO if is_main else logging.WARNING)
    logger.propagate = False
    transformers.logging.set_verbosity_warning()


__all__ = ["check_finished", "check_output_dir", "check_resume", "main", "parse_args", "run"]
