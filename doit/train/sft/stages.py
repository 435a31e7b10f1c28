"""Staged fine-tuning: a staged mix (`doit.data.mixes`, ``stages:``) trained stage by stage.

`doit.train.sft.run` trains stage k into ``<output_dir>/stages/<k>/`` with ``--stage k``
(`stage_argv`): an ordinary fine-tuning run (its own run_info.json, resume from its last
checkpoint, read back once DONE) whose base is stage k-1's final model (the recipe's base for
stage 1) and whose schedule is the stage's own keys (`doit.data.mixes.STAGE_SCHEDULE`) over the
recipe's.
Each stage starts a new trainer, so its **optimiser state and learning-rate schedule start
afresh** (DMT's stages do the same). The top of ``output_dir`` then holds the staged run's
record (`doit.train.rundir`: run_info.json with ``staged``, metrics.jsonl, DONE with
``model_dir``), so a study scores the last stage's model as the run's and each earlier stage's
final model for forgetting.

A LoRA run must merge its adapter (``merge_lora: true``): the next stage starts from the merged
model. A rerun with the same recipe and mix reads every finished stage back; another recipe or
mix in the same folder is refused, naming the keys that differ.
"""

from __future__ import annotations

import time
from pathlib import Path

from doit.train import rundir
from doit.train.errors import ConfigError
from doit.train.rundir import RunResult


def staged_mix(args):
    """The `doit.data.mixes.MixSpec` of a staged mix trained whole (no ``--stage``), or None."""
    d = args.data
    if not d.mix or d.stage is not None:
        return None
    from doit.data.mixes import load_mix

    spec = load_mix(d.mix)
    return spec if spec.stages else None


def check_staged(args, out: Path, differ: list[str]) -> None:
    """Before the first stage: a LoRA run merges (the next stage starts from the merged
    model), and a staged folder already there is this run's (``differ``: the keys in which its
    recorded config differs, `doit.train.sft.identity_differences`)."""
    if args.model.use_peft and not args.run.merge_lora:
        raise ConfigError(
            "merge_lora",
            "a staged LoRA run needs merge_lora: true (each stage starts from the one "
            "before's merged model)",
        )
    if differ:
        raise ConfigError(
            "output_dir",
            f"{out} holds a staged run of another config (differs in: {', '.join(differ)}); "
            "give another output_dir",
        )


def stage_argv(args, k: int, stage, base) -> list[str]:
    """The recipe's argv for stage ``k``: ``--stage k``, its folder, its base, its schedule."""
    argv = [
        *args.argv,
        "--stage",
        str(k),
        "--output_dir",
        str(rundir.stage_dir(args.training.output_dir, k)),
    ]
    argv += ["--model_name_or_path", str(base)]
    return argv + [x for key, value in stage.schedule.items() for x in (f"--{key}", str(value))]


def write_staged_info(args, spec) -> None:
    """The staged run's run_info.json before its first stage: its config (the identity a
    rerun is held to) and its stages' folders and schedules."""
    stages = [
        {"dir": f"{rundir.STAGES}/{k}", "replay": st.replay, "schedule": st.schedule}
        for k, st in enumerate(spec.stages, 1)
    ]
    info = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "argv": args.argv,
        "launch": args.launch,
        "staged": stages,
        "config": args.to_dict(),
    }
    rundir.write_run_info(args.training.output_dir, info)


def staged_end(results: list[RunResult], stages: int, wall_s: float) -> dict:
    """The staged run's "end" row: the last stage's, with tokens summed over the stages, this
    call's wall seconds, how many stages, and where the final model lies."""
    last = results[-1].final
    tokens = sum(r.final.get("tokens") or 0 for r in results)
    return {
        **last,
        "tokens": tokens,
        "wall_s": wall_s,
        "stages": stages,
        "model_dir": f"{rundir.STAGES}/{stages}",
    }


def finish_staged(out: Path, results: list[RunResult], end: dict) -> None:
    """run_info.json's ``data`` summed over the stages (train counts and assistant tokens per
    ability; the items' hash of the stages' items in order), the "end" row and DONE."""
    from doit.data.manifest import data_hash

    infos = [rundir.read_run_info(r.run_dir).get("data", {}) for r in results]
    summed = {}
    for key in ("train_counts", "assistant_tokens"):
        summed[key] = {}
        for info in infos:
            for ability, value in info.get(key, {}).items():
                summed[key][ability] = summed[key].get(ability, 0) + value
    summed["train_items_sha256"] = [info.get("train_items_sha256") for info in infos]
    if infos and infos[0].get("source"):
        summed["source"] = infos[0]["source"]
        summed["source_data_hash"] = data_hash(infos[0]["source"])
    rundir.update_run_info(out, data=summed)
    rundir.append_metrics(out, end)
    rundir.write_done(out, end)
