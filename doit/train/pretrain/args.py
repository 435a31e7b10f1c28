"""The arguments of a pretraining run: `PretrainArguments` plus transformers' `TrainingArguments`,
from ``--config FILE.yaml`` and ``--key value`` flags, checked before any data is read (a bad
value is a `doit.train.errors.ConfigError` naming the key)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from doit.train.errors import ConfigError
from doit.train.pretrain.model import model_config


@dataclass
class PretrainArguments:
    """The run's data and architecture (everything else is `transformers.TrainingArguments`)."""

    micro_dir: str | None = field(
        default=None,
        metadata={
            "help": "A micro corpus (`python -m doit.data micro --out DIR`): the default "
            "source of train_file, valid_file and tokenizer_path."
        },
    )
    train_file: str | None = field(
        default=None, metadata={"help": ".txt (a document a line) or .jsonl; default micro_dir's"}
    )
    valid_file: str | None = field(default=None, metadata={"help": "As train_file, for eval."})
    tokenizer_path: str | None = field(
        default=None, metadata={"help": "A tokenizer directory (AutoTokenizer) with an EOS token."}
    )
    text_field: str = field(default="text", metadata={"help": "The text key of JSONL records."})
    block_size: int = field(default=256, metadata={"help": "Tokens per packed training block."})
    size: str = field(default="custom", metadata={"help": "Size label written to metrics."})
    value_mode: str = field(default="vanilla", metadata={"help": "vanilla|resformer|svformer"})
    value_learnable: bool = field(default=False, metadata={"help": "Learnable resformer mix."})
    value_lambdas: list[float] = field(
        default_factory=lambda: [0.5, 0.5], metadata={"help": "(l1, l2) of V' = l1 V_1 + l2 V_n"}
    )
    num_hidden_layers: int = field(default=4, metadata={"help": "Transformer blocks."})
    hidden_size: int = field(default=64, metadata={"help": "Model width."})
    intermediate_size: int = field(default=176, metadata={"help": "SwiGLU hidden width."})
    num_attention_heads: int = field(default=2, metadata={"help": "Query heads."})
    num_key_value_heads: int | None = field(default=None, metadata={"help": "None: MHA."})
    tie_word_embeddings: bool = field(default=False, metadata={"help": "Paper: untied."})
    rope_theta: float = field(default=10_000.0, metadata={"help": "RoPE base (paper: 1e4)."})
    attn_implementation: str = field(default="sdpa", metadata={"help": "sdpa|eager"})

    @property
    def arch(self) -> str:
        return "resformer_learnable" if self.value_learnable else self.value_mode


@dataclass
class PretrainRecipeArgs:
    """A pretraining run's parsed arguments (what `doit.train.pretrain.run` takes)."""

    model: PretrainArguments  # the data and the architecture
    training: Any  # transformers.TrainingArguments
    argv: list = field(default_factory=list)


def parse_args(argv: list[str] | None = None) -> PretrainRecipeArgs:
    """The run's arguments from ``--config FILE.yaml`` and ``--key value`` flags; raises
    `ConfigError` naming the key.

    A first pass reads the launch keys and prepares the process (`doit.train.launch`:
    single-process distributed defaults, the gloo process group DeepSpeed needs on CPU); the
    second builds the dataclasses with `doit.train.launch.cpu_overrides` appended.
    """
    import sys

    from transformers import TrainingArguments

    from doit.train import launch
    from doit.train.config import RecipeParser

    argv = list(sys.argv[1:] if argv is None else argv)
    if "-h" in argv or "--help" in argv:  # every key's help, not the first pass's few
        RecipeParser((PretrainArguments, TrainingArguments)).parse_args_and_config(argv)
    keys, _ = RecipeParser(launch.LaunchKeys).parse_args_and_config(
        argv, return_remaining_strings=True
    )
    info = launch.describe(keys.deepspeed)
    overrides = launch.cpu_overrides(info, keys)
    launch.prepare(info)
    parser = RecipeParser((PretrainArguments, TrainingArguments))
    try:
        args, training_args = parser.parse_args_and_config(argv + overrides)
    except ValueError as e:
        raise ConfigError("config", str(e)) from None
    launch.check_world_size(training_args, deepspeed=bool(keys.deepspeed))
    check_training_args(training_args)
    if args.block_size < 1:
        raise ConfigError("block_size", f"expected an integer >= 1, got {args.block_size}")
    try:  # a bad architecture fails here, before any data is read
        model_config(args)
    except Exception as e:  # the config's strict validation wraps the ValueError it raises
        raise ConfigError("model", f"model config: {e.__cause__ or e}") from e
    return PretrainRecipeArgs(args, training_args, argv)


KEYS = {"train": "train_file", "valid": "valid_file", "tokenizer": "tokenizer_path"}


def resolve_paths(args: PretrainArguments) -> dict[str, Path]:
    """train/valid/tokenizer paths, defaulting to micro_dir's; `ConfigError` if any is missing."""
    micro = Path(args.micro_dir) if args.micro_dir else None
    defaults = {
        "train": "pretrain/train.txt",
        "valid": "pretrain/valid.txt",
        "tokenizer": "tokenizer",
    }
    given = {"train": args.train_file, "valid": args.valid_file, "tokenizer": args.tokenizer_path}
    paths = {}
    for key, value in given.items():
        if value is None and micro is None:
            raise ConfigError(KEYS[key], "no path given and micro_dir is unset")
        paths[key] = Path(value) if value is not None else micro / defaults[key]
        if not paths[key].exists():
            hint = (
                f"; build the micro corpus: python -m doit.data micro --out {micro}"
                if (value is None)
                else ""
            )
            raise ConfigError(
                KEYS[key] if value is not None else "micro_dir",
                f"{paths[key]} does not exist{hint}",
            )
        if key != "tokenizer" and paths[key].is_file() and not _has_text(paths[key]):
            raise ConfigError(
                KEYS[key] if value is not None else "micro_dir",
                f"{paths[key]} is empty: no text to train or evaluate on",
            )
    return paths


def _has_text(path: Path) -> bool:
    """Whether ``path`` holds anything but white space (read in chunks: it may be large)."""
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            if chunk.strip():
                return True
    return False


def check_training_args(training_args) -> None:
    """Raise for settings that break the ladder's guarantees (same data order for every arch)."""
    if training_args.train_sampling_strategy != "sequential":
        raise ConfigError(
            "train_sampling_strategy",
            f"{training_args.train_sampling_strategy!r}: pretraining orders the blocks itself "
            "(EpochPermutation, by data_seed) and needs 'sequential'",
        )
    if training_args.bf16 or training_args.fp16:
        raise ConfigError(
            "bf16", "bf16/fp16: the micro ladder trains in fp32 on CPU; set both false"
        )
