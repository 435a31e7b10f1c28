"""A run directory's life: run_info.json, resume from the last checkpoint, the DONE marker.

```
<output_dir>/
  run_info.json        resolved config, launch, schedule, data provenance, versions, git commit
  metrics.jsonl        one line per log (doit.train.callbacks.MetricsJsonl)
  checkpoint-<step>/   one per epoch; only the newest keeps optimiser state while training
  model.safetensors, config.json, tokenizer files   the final model (LoRA: merged) + tokenizer
  adapter/             LoRA/QLoRA runs: the adapter itself
  DONE                 written last; a run with DONE is never redone
```
Rerunning the same command resumes from the newest checkpoint that still holds its optimiser
state; a checkpoint folder without trainer_state.json (killed mid-save) is removed first.
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import time
from importlib import metadata
from pathlib import Path

from doit.data.io import write_json
from doit.data.manifest import data_hash
from doit.train.callbacks import checkpoints, has_training_state, strip_training_state

DONE = "DONE"
RUN_INFO = "run_info.json"
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


def is_done(output_dir) -> bool:
    return (Path(output_dir) / DONE).is_file()


def resume_checkpoint(output_dir, is_main: bool) -> str | None:
    """The newest checkpoint to resume from, or None for a fresh start."""
    found = checkpoints(output_dir)
    complete = [c for c in found if (c / "trainer_state.json").is_file()]
    if is_main:
        for partial in (c for c in found if c not in complete):
            shutil.rmtree(partial, ignore_errors=True)
    resumable = [c for c in complete if has_training_state(c)]
    return str(resumable[-1]) if resumable else None


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


def write_run_info(args, schedule: dict, data_info: dict) -> dict:
    """Written by the main process before the model loads (and again on each resume)."""
    data_info = {**data_info, "source_data_hash": data_hash(data_info["source"])}
    info = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "argv": args.argv,
        "launch": args.launch,
        "schedule": schedule,
        "data": data_info,
        "config": args.to_dict(),
        "versions": versions(),
        "git": git_state(),
    }
    path = Path(args.training.output_dir) / RUN_INFO
    sessions = (
        json.loads(path.read_text(encoding="utf-8")).get("sessions", []) if path.is_file() else []
    )
    info["sessions"] = [*sessions, {"started": info["started"], "launch": args.launch}]
    write_json(path, info)
    return info


def update_run_info(output_dir, **fields) -> None:
    path = Path(output_dir) / RUN_INFO
    info = json.loads(path.read_text(encoding="utf-8"))
    write_json(path, {**info, **fields})


def finish(trainer, args, tokenizer) -> None:
    """Save the final model and tokenizer, write DONE, then drop the last optimiser state."""
    out = Path(args.training.output_dir)
    peft = args.model.use_peft
    trainer.save_model(str(out / "adapter") if peft else str(out))  # every rank (ZeRO-3 gathers)
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(str(out))
        if peft and args.run.merge_lora:
            from doit.train.model import merge_adapter

            merge_adapter(args, tokenizer, str(out / "adapter"), str(out))
        state = trainer.state
        write_json(
            out / DONE,
            {
                "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "global_step": state.global_step,
                "epoch": state.epoch,
            },
        )
        strip_all(out)
    trainer.accelerator.wait_for_everyone()  # no rank leaves while another still writes


def strip_all(output_dir) -> None:
    for ckpt in checkpoints(output_dir):
        strip_training_state(ckpt)
