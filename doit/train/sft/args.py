"""The recipe's arguments: TRL's dataclasses plus doit's, from ``--config FILE.yaml`` and flags.

Every key is flat (``--key value`` overrides the YAML's ``key: value``). The dataclasses are
TRL's `ScriptArguments`, `SFTConfig` and `ModelConfig` and the two below. Parsing runs in two
passes: a first, light pass reads the doit keys and the few training keys that decide the
launch environment (``deepspeed``, ``per_device_train_batch_size``, ...), validates them and
prepares the process (`doit.train.launch`); the second pass builds `SFTConfig` with the derived
values appended as overrides (gradient accumulation from ``global_batch_size``, fp32 and
``use_cpu`` without an accelerator). Everything wrong with a config is reported here, naming the
key and what it allows, before any data is tokenised or any model is loaded. `check_args` makes
the same checks without preparing the process (the study plan checks every cell so).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from doit.data import abilities as ab
from doit.data import kinds as ak
from doit.data.chat_formats import CHAT_FORMATS
from doit.data.layout import TRAIN_POOLS
from doit.train import launch
from doit.train.errors import ConfigError

SCHEDULES = ("epochs", "steps")
# Recipe keys that change how a run goes, not what it learns: left out of `training_identity`.
EXECUTION_KEYS = (
    "output_dir",
    "run_name",
    "model_name_or_path",
    "doit_dir",
    "mix",
    "deepspeed",
    "report_to",
    "logging_steps",
    "disable_tqdm",
    "dataloader_num_workers",
    "dataloader_pin_memory",
    "per_device_eval_batch_size",
)
# Keys the sessions of one run may differ in, beyond EXECUTION_KEYS: the launch sets some per
# rank or per machine (local_rank, accelerator_config), the others log, report or plumb the
# processes. `resume_identity` leaves them out.
SESSION_KEYS = (
    "local_rank",
    "accelerator_config",
    "resume_from_checkpoint",
    "ddp_backend",
    "ddp_timeout",
    "save_on_each_node",
    "skip_memory_metrics",
    "push_to_hub",
    "project",
)
SESSION_PREFIXES = ("log_", "logging_", "hub_", "trackio_", "dataloader_")
SAVE_STRATEGIES = ("epoch",)
EVAL_STRATEGIES = ("epoch", "no")
HALF_DTYPES = ("bfloat16", "float16")


@dataclass
class DoitDataArguments:
    """Where the training items come from: exactly one of subset_dir, mix, per_ability/synthetic."""

    doit_dir: str | None = field(
        default=None,
        metadata={
            "help": "A DoIT download (or doit-layout dir) that per_ability/mix/synthetic draw from."
        },
    )
    per_ability: int | None = field(
        default=None,
        metadata={
            "help": "n training items per ability, drawn by doit.data.subsets (nested, seeded)."
        },
    )
    mix: str | None = field(
        default=None, metadata={"help": "A mix YAML (doit.data.mixes) drawn from doit_dir."}
    )
    stage: int | None = field(
        default=None,
        metadata={
            "help": "A staged mix's stage to train alone (1-based; its items, replay included). "
            "Without it a staged mix trains every stage in order (doit.train.sft.stages)."
        },
    )
    subset_dir: str | None = field(
        default=None,
        metadata={
            "help": "An existing cell dir (from `doit.data subset` or `mix`): its train/valid."
        },
    )
    synthetic: int | None = field(
        default=None,
        metadata={
            "help": "n synthetic (GPT-4) items drawn from doit_dir, alone or on top of per_ability."
        },
    )
    exclude_abilities: list[str] | None = field(
        default=None,
        metadata={"help": "Abilities left out of per_ability (leave-one-ability-out runs)."},
    )
    pool: str = field(
        default="1000", metadata={"help": "Train pool per_ability draws from: 1000 or full."}
    )
    sample_seed: int = field(
        default=0,
        metadata={"help": "Seed of the data draw (`seed` is the training seed of SFTConfig)."},
    )
    formulation: str = field(
        default=ak.LETTER,
        metadata={
            "help": "letter: items as stored (the study's); text: multiple-choice items without "
            "option lines, answered by the gold option's text (doit.data.kinds.formulate)."
        },
    )


@dataclass
class DoitTrainArguments:
    """How the run is shaped beyond SFTConfig: renderer, schedule, global batch."""

    chat_format: str = field(
        default="doit",
        metadata={"help": "doit: the study's speaker tokens and template; native: the base's own."},
    )
    schedule: str = field(
        default="epochs",
        metadata={"help": "epochs: num_train_epochs decides; steps: max_steps decides."},
    )
    min_steps: int = field(
        default=0,
        metadata={"help": "schedule=epochs: raise the epoch count until at least this many steps."},
    )
    global_batch_size: int | None = field(
        default=None,
        metadata={
            "help": "Sequences per optimiser step over all ranks; sets gradient_accumulation_steps."
        },
    )
    merge_lora: bool = field(
        default=True,
        metadata={
            "help": "LoRA/QLoRA: also save the adapter merged into the base as a full model."
        },
    )


@dataclass
class RecipeArgs:
    script: Any  # trl.ScriptArguments
    training: Any  # trl.SFTConfig
    model: Any  # trl.ModelConfig
    data: DoitDataArguments
    run: DoitTrainArguments
    launch: dict = field(default_factory=dict)  # launcher, world size, what the environment changed
    argv: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "script": dataclasses.asdict(self.script),
            "training": self.training.to_dict(),
            "model": dataclasses.asdict(self.model),
            "data": dataclasses.asdict(self.data),
            "run": dataclasses.asdict(self.run),
        }


def dataclass_types(placed: bool = True) -> tuple:
    """The recipe's dataclasses; ``placed=False``: `SFTConfig` without its device set-up."""
    from trl import ModelConfig, ScriptArguments, SFTConfig

    training = SFTConfig if placed else unplaced_config()
    return (ScriptArguments, training, ModelConfig, DoitDataArguments, DoitTrainArguments)


@functools.cache
def unplaced_config() -> type:
    """`SFTConfig` whose construction sets no device up: `TrainingArguments` would build
    accelerate's state there (a process group under DeepSpeed) and reset any it finds."""
    from trl import SFTConfig

    class UnplacedSFTConfig(SFTConfig):
        distributed_state = None  # world_size: 1

        @property
        def device(self):
            import torch

            return torch.device("cpu")

    return UnplacedSFTConfig


def make_parser(placed: bool = True):
    from doit.train.config import RecipeParser

    return RecipeParser(dataclass_types(placed), allow_abbrev=False)


def parse_args(argv: list[str] | None = None) -> RecipeArgs:
    """Parse, validate and prepare the process; raises ConfigError (`launch.LaunchError` is one)."""
    argv = list(argv if argv is not None else sys.argv[1:])
    if "-h" in argv or "--help" in argv:
        make_parser().parse_args_and_config(argv)  # prints every key's help and exits
    return _parse_recipe(argv, prepare=True)


def check_args(argv: list[str]) -> RecipeArgs:
    """`parse_args`'s checks with no effect on the process: no launch preparation (environment,
    process groups), no device set-up, no world-size check against a launcher; environment
    variables the config sets are put back. What it returns is for reading, not for `run`."""
    from transformers.integrations import deepspeed as hf_deepspeed

    registered = hf_deepspeed._hf_deepspeed_config_weak_ref  # a DeepSpeed config registers
    with launch.scoped_environment():  # itself process-wide (ZeRO-3 model loading reads it)
        try:
            return _parse_recipe(list(argv), prepare=False)
        finally:
            hf_deepspeed._hf_deepspeed_config_weak_ref = registered


def _parse_recipe(argv: list[str], prepare: bool) -> RecipeArgs:
    from doit.train.config import RecipeParser

    first = RecipeParser(
        (DoitDataArguments, DoitTrainArguments, launch.LaunchKeys), allow_abbrev=False
    )
    data, run, peek, _ = _parse(first, argv, remaining=True)
    validate_data(data)
    validate_run(run)
    if str(peek.deepspeed or "").endswith(".json") and not Path(peek.deepspeed).is_file():
        raise ConfigError("deepspeed", f"no such file: {peek.deepspeed}")
    info = launch.describe(peek.deepspeed)
    info["overrides"] = derived_overrides(run, peek, info) + launch.cpu_overrides(info, peek)
    if prepare:
        launch.prepare(info)
    parser = make_parser(placed=prepare)
    script, training, model, data, run = _parse(parser, argv + info["overrides"])
    args = RecipeArgs(script, training, model, data, run, launch=info, argv=argv)
    validate_training(args)
    if prepare:
        launch.check_world_size(training, deepspeed=bool(peek.deepspeed))
    return args


def _parse(parser, argv: list[str], remaining: bool = False):
    return parser.parse_args_and_config(argv, return_remaining_strings=remaining)


def derived_overrides(run: DoitTrainArguments, peek: launch.LaunchKeys, info: dict) -> list[str]:
    """Flags appended to the command line: values the recipe derives, never guesses silently."""
    if peek.dataset_kwargs:
        raise ConfigError(
            "dataset_kwargs", "must be unset: doit.train.sft.data tokenises, TRL only collates"
        )
    out = ["--dataset_kwargs", json.dumps({"skip_prepare_dataset": True})]
    if peek.save_strategy is None:  # TRL's default (steps) is not the recipe's: one per epoch
        out += ["--save_strategy", SAVE_STRATEGIES[0]]
    if run.global_batch_size is not None:
        ga = accumulation_steps(
            run.global_batch_size, peek.per_device_train_batch_size, info["world_size"]
        )
        if peek.gradient_accumulation_steps not in (1, ga):
            raise ConfigError(
                "gradient_accumulation_steps",
                f"{peek.gradient_accumulation_steps} contradicts global_batch_size "
                f"{run.global_batch_size} (which gives {ga}); set only one of them",
            )
        out += ["--gradient_accumulation_steps", str(ga)]
    if not info["accelerator"]:  # use_cpu / the DeepSpeed gloo state: launch.cpu_overrides
        out += ["--bf16", "false", "--fp16", "false", "--dtype", "float32"]
    return out


def accumulation_steps(global_batch: int, per_device: int, world_size: int) -> int:
    per_step = per_device * world_size
    if global_batch < 1 or global_batch % per_step:
        raise ConfigError(
            "global_batch_size",
            f"{global_batch} is not a positive multiple of per_device_train_batch_size "
            f"({per_device}) x world size ({world_size}) = {per_step}",
        )
    return global_batch // per_step


def _choice(key: str, value, allowed) -> None:
    if value not in allowed:
        raise ConfigError(key, f"expected one of {', '.join(map(str, allowed))}, got {value!r}")


def validate_data(d: DoitDataArguments) -> None:
    sources = [k for k in ("subset_dir", "mix") if getattr(d, k)]
    if d.per_ability is not None or d.synthetic is not None:
        sources.append("per_ability/synthetic")
    if len(sources) != 1:
        raise ConfigError(
            "data",
            "give exactly one source: subset_dir, mix (+ doit_dir), or per_ability and/or "
            f"synthetic (+ doit_dir); got {sources or 'none'}",
        )
    _choice("pool", str(d.pool), TRAIN_POOLS)
    _choice("formulation", d.formulation, ak.FORMULATIONS)
    for key in ("per_ability", "synthetic"):
        value = getattr(d, key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise ConfigError(key, f"expected an integer >= 1, got {value!r}")
    if d.stage is not None and (not d.mix or isinstance(d.stage, bool) or d.stage < 1):
        raise ConfigError("stage", f"a stage (an integer >= 1) of a staged --mix; got {d.stage!r}")
    if d.exclude_abilities:
        if d.per_ability is None:
            raise ConfigError(
                "exclude_abilities", "applies to per_ability only (a mix has `exclude`)"
            )
        try:
            ab.parse_keys(list(d.exclude_abilities))
        except ValueError as e:
            raise ConfigError("exclude_abilities", str(e)) from None
    _validate_paths(d)


def _validate_paths(d: DoitDataArguments) -> None:
    if d.subset_dir:
        if not (Path(d.subset_dir) / "curated" / "train").is_dir():
            raise ConfigError(
                "subset_dir", f"{d.subset_dir} has no curated/train/ (not a doit cell)"
            )
        return
    if not d.doit_dir or not Path(d.doit_dir).is_dir():
        raise ConfigError(
            "doit_dir", f"needed for mix/per_ability/synthetic; not a directory: {d.doit_dir!r}"
        )
    if d.mix:
        from doit.data.mixes import MixError, load_mix

        if not Path(d.mix).is_file():
            raise ConfigError("mix", f"no such file: {d.mix}")
        try:
            spec = load_mix(d.mix)
        except MixError as e:
            raise ConfigError("mix", str(e)) from None
        if d.stage is not None and d.stage > len(spec.stages):
            raise ConfigError("stage", f"{d.stage}: {d.mix} has {len(spec.stages)} stages")


def validate_run(r: DoitTrainArguments) -> None:
    _choice("chat_format", r.chat_format, CHAT_FORMATS)
    _choice("schedule", r.schedule, SCHEDULES)
    if r.min_steps < 0:
        raise ConfigError("min_steps", f"expected an integer >= 0, got {r.min_steps}")
    if r.min_steps and r.schedule != "epochs":
        raise ConfigError("min_steps", "applies to schedule: epochs only (steps fixes max_steps)")


def validate_training(a: RecipeArgs) -> None:
    t, m = a.training, a.model
    if not m.model_name_or_path:
        raise ConfigError(
            "model_name_or_path", "required: the base's local directory (doit never downloads)"
        )
    if a.script.dataset_name:
        raise ConfigError("dataset_name", "unsupported: data comes from doit_dir/mix/subset_dir")
    if a.run.schedule == "epochs" and t.max_steps > 0:
        raise ConfigError("max_steps", "schedule: epochs needs max_steps -1 (or schedule: steps)")
    if a.run.schedule == "steps" and t.max_steps <= 0:
        raise ConfigError("max_steps", "schedule: steps needs max_steps > 0")
    if a.run.schedule == "epochs" and not t.num_train_epochs > 0:
        raise ConfigError("num_train_epochs", f"expected a number > 0, got {t.num_train_epochs}")
    if not (math.isfinite(t.learning_rate) and t.learning_rate > 0):
        raise ConfigError("learning_rate", f"expected a number > 0, got {t.learning_rate}")
    _choice("save_strategy", str(t.save_strategy.value), SAVE_STRATEGIES)
    _choice("eval_strategy", str(t.eval_strategy.value), EVAL_STRATEGIES)
    if t.packing:
        _validate_packing(t, m)
    if m.dtype in HALF_DTYPES and not (t.deepspeed or m.use_peft):
        raise ConfigError(
            "dtype",
            f"{m.dtype} weights without DeepSpeed train with no fp32 master copy; use float32 "
            "(bf16/fp16 then autocast) or a DeepSpeed config",
        )
    precision = "fp16" if t.fp16 else "bf16" if t.bf16 else None
    if (precision, m.dtype) in (("fp16", "bfloat16"), ("bf16", "float16")):
        want = "float16" if t.fp16 else "bfloat16"
        raise ConfigError("dtype", f"{m.dtype} weights under {precision}: use {want} (or float32)")
    if (m.load_in_4bit or m.load_in_8bit) and not m.use_peft:
        raise ConfigError("load_in_4bit", "quantised bases train adapters only: set use_peft: true")
    if m.load_in_4bit or m.load_in_8bit:
        _require_bitsandbytes()
    _validate_report_to(t.report_to)


def _validate_report_to(report_to) -> None:
    from transformers.integrations import get_available_reporting_integrations
    from transformers.integrations.integration_utils import INTEGRATION_TO_CALLBACK

    available = set(get_available_reporting_integrations())
    for backend in [report_to] if isinstance(report_to, str) else report_to or []:
        if backend in ("none", "all"):
            continue
        if backend not in INTEGRATION_TO_CALLBACK:
            known = ", ".join(["none", *INTEGRATION_TO_CALLBACK])
            raise ConfigError("report_to", f"expected some of {known}, got {backend!r}")
        if backend not in available:
            raise ConfigError("report_to", f"{backend} is not installed (pip install {backend})")


def _validate_packing(t, m) -> None:
    _choice("packing_strategy", t.packing_strategy, ("bfd",))
    attn = m.attn_implementation or ""
    if "flash" not in attn:
        raise ConfigError(
            "packing",
            "padding-free bfd packing needs FlashAttention (attn_implementation: "
            "flash_attention_2 or kernels-community/flash-attn3); without it use packing: false "
            "and train_sampling_strategy: group_by_length",
        )


def _require_bitsandbytes() -> None:
    try:
        import bitsandbytes  # noqa: F401
    except ImportError as e:
        raise ConfigError(
            "load_in_4bit",
            f"QLoRA needs bitsandbytes, which failed to import ({e}); pip install bitsandbytes",
        ) from None


def steps_per_epoch(n_sequences: int, per_device: int, world_size: int, accumulation: int) -> int:
    """Optimiser steps in one epoch, as `Trainer` counts them (last partial batch kept)."""
    batches = math.ceil(n_sequences / (per_device * world_size))
    return max(math.ceil(batches / accumulation), 1)


def resolve_schedule(args: RecipeArgs, n_train: int) -> dict:
    """Decide (and record) epochs and steps; raises epochs to honour min_steps."""
    t, r = args.training, args.run
    spe = steps_per_epoch(
        n_train, t.per_device_train_batch_size, t.world_size, t.gradient_accumulation_steps
    )
    out = {"schedule": r.schedule, "train_sequences": n_train, "steps_per_epoch": spe}
    if r.schedule == "steps":
        return {**out, "max_steps": t.max_steps, "num_train_epochs": t.max_steps / spe}
    epochs = t.num_train_epochs
    raised = bool(r.min_steps and math.ceil(epochs * spe) < r.min_steps)
    if raised:
        epochs = math.ceil(r.min_steps / spe)
        t.num_train_epochs = float(epochs)
    return {
        **out,
        "num_train_epochs": epochs,
        "max_steps": math.ceil(epochs * spe),
        "min_steps": r.min_steps,
        "epochs_raised_for_min_steps": raised,
    }


def planned_schedule(cfg: dict, n_train: int, world_size: int = 1) -> dict:
    """`resolve_schedule` for a flat recipe mapping that is not parsed yet (the study runner's
    plan estimates steps so): keys it leaves unset take the dataclasses' defaults, and
    ``global_batch_size`` sets the gradient accumulation as `derived_overrides` does."""
    from types import SimpleNamespace

    from trl import SFTConfig

    run_keys = {f.name for f in dataclasses.fields(DoitTrainArguments)}
    run = DoitTrainArguments(**{k: v for k, v in cfg.items() if k in run_keys and v is not None})
    defaults = {f.name: f.default for f in dataclasses.fields(SFTConfig)}
    keys = (
        "per_device_train_batch_size",
        "gradient_accumulation_steps",
        "num_train_epochs",
        "max_steps",
    )
    given = {k: defaults[k] if cfg.get(k) is None else cfg[k] for k in keys}
    training = SimpleNamespace(world_size=world_size, **given)
    if run.global_batch_size is not None:
        training.gradient_accumulation_steps = accumulation_steps(
            run.global_batch_size, training.per_device_train_batch_size, world_size
        )
    return resolve_schedule(SimpleNamespace(training=training, run=run), n_train)


def resume_identity(config: dict) -> dict:
    """What a checkpoint's run and a run resuming it must share, from `RecipeArgs.to_dict`
    (run_info.json's ``config``): `training_identity` of its keys, flattened, less
    SESSION_KEYS; less a mix's path (its content is in the training items' hash, which the
    resume check compares too) and, with ``global_batch_size``, the gradient accumulation
    (it only splits the batch among the ranks). As JSON holds it."""
    flat = {k: v for section in config.values() for k, v in section.items()}
    kept = {
        k: v
        for k, v in flat.items()
        if k != "mix" and k not in SESSION_KEYS and not k.startswith(SESSION_PREFIXES)
    }
    out = training_identity(kept)
    if flat.get("global_batch_size"):
        out.pop("gradient_accumulation_steps", None)
    return json.loads(json.dumps(out, default=str))


def training_identity(cfg: dict) -> dict:
    """What decides a fine-tuning run's result, from its flat recipe mapping: every key but
    `EXECUTION_KEYS` (and ``formulation: letter``, the default); the per-device batch size when ``global_batch_size`` fixes the batch
    (it then only splits it); a mix's content rather than its path."""
    out = {k: v for k, v in cfg.items() if k not in EXECUTION_KEYS}
    if out.get("formulation") == ak.LETTER:  # the default: ids from before formulations hold
        del out["formulation"]
    if out.get("stage", 0) is None:  # likewise a run that is no stage of a staged mix
        del out["stage"]
    if cfg.get("global_batch_size"):
        out.pop("per_device_train_batch_size", None)
    if cfg.get("mix"):
        from doit.io import read_yaml

        out["mix_content"] = read_yaml(cfg["mix"]) or {}
    return out
