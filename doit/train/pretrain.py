"""Pretraining a base from scratch: Llama / ResFormer / SVFormer on a text corpus (the micro ladder).

The data path is deterministic: documents (one a line of a ``.txt`` file, or the ``text_field``
of each ``.jsonl`` record) are tokenised without special tokens, each followed by EOS,
concatenated and cut into ``block_size`` blocks (the tail is dropped); epoch ``e`` reads the
training blocks in the (e+1)-th permutation drawn from a generator seeded with ``data_seed``
(else ``seed``): `EpochPermutation` (``train_sampling_strategy`` must say "sequential", so
Trainer's own shuffling stays off). Every architecture trained with one seed therefore sees the
same blocks in the same order, a fresh order each epoch; the model seed only changes the weights.
Blocks are plain causal windows: a document may attend to the one before it across its EOS.

Run directory (``output_dir``)::

    metrics.jsonl   one JSON object a line; ``kind`` is "start" (arch, size, seed, parameter
                    counts, unigram baseline, tokens per step), "train" (loss, lr, grad_norm),
                    "valid" (loss) or "end" (the start fields plus final valid loss, tokens,
                    wall time); every row has step, tokens, wall_s
    model.safetensors, config.json, generation_config.json, tokenizer files
    DONE            written last (a copy of the "end" row); a run with DONE is never redone

Parameter counts: ``params_total`` counts every parameter once; ``params_non_embedding`` leaves
out the input embedding and the LM head (Kaplan et al.'s N).
Unigram baseline (nats per token): ``unigram_entropy`` of the training tokens and
``unigram_valid_loss``, the valid tokens' cross-entropy under that (add-one smoothed) distribution:
what a model that ignores context would reach.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
from transformers import Trainer, TrainerCallback

from doit.data.io import read_jsonl, write_json
from doit.train.optim import DoitOptimizerMixin
from doit.train.run import DONE, is_done

log = logging.getLogger("doit.train.pretrain")
METRICS = "metrics.jsonl"
DEFAULT_MICRO_DIR = "data/generated/micro"
DATA_SUFFIXES = (".txt", ".jsonl", ".json")


@dataclass
class PretrainArguments:
    """The run's data and architecture (everything else is `transformers.TrainingArguments`)."""

    micro_dir: str | None = field(
        default=DEFAULT_MICRO_DIR,
        metadata={"help": "A micro corpus (`python -m doit.data micro --out DIR`): the default "
                          "source of train_file, valid_file and tokenizer_path."},
    )  # fmt: skip
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
class _Launch:
    """The training keys that decide the launch environment (read before TrainingArguments)."""

    deepspeed: str | None = None
    accelerator_config: str | None = None


def parse_args(argv: list[str] | None = None):
    """(PretrainArguments, TrainingArguments) from ``--config FILE.yaml`` and ``--key value`` flags.

    A first pass reads ``deepspeed`` and prepares the process (`doit.train.launch.prepare`:
    single-process distributed defaults, the gloo process group DeepSpeed needs on CPU); the
    second builds the dataclasses with ``use_cpu`` (and, for DeepSpeed on CPU, the prepared
    accelerator state) appended when no accelerator is present.
    """
    import sys

    from transformers import TrainingArguments
    from trl import TrlParser

    from doit.train import launch

    argv = list(sys.argv[1:] if argv is None else argv)
    peek, _ = TrlParser(_Launch).parse_args_and_config(argv, return_remaining_strings=True)
    info = launch.describe(peek.deepspeed)
    launch.prepare(info)
    overrides = []
    if not info["accelerator"]:
        overrides += ["--use_cpu", "true"]
        if peek.deepspeed:
            accel = peek.accelerator_config or {}
            accel = json.loads(accel) if isinstance(accel, str) else accel
            overrides += [
                "--accelerator_config",
                json.dumps({**accel, "use_configured_state": True}),
            ]
    parser = TrlParser((PretrainArguments, TrainingArguments))
    args, training_args = parser.parse_args_and_config(argv + overrides)
    launch.check_world_size(training_args, deepspeed=bool(peek.deepspeed))
    check_training_args(training_args)
    try:  # a bad architecture fails here, before any data is read
        model_config(args)
    except Exception as e:  # the config's strict validation wraps the ValueError it raises
        raise ValueError(f"model config: {e.__cause__ or e}") from e
    return args, training_args


# --- data ------------------------------------------------------------------------------------------
def resolve_paths(args: PretrainArguments) -> dict[str, Path]:
    """train/valid/tokenizer paths, defaulting to micro_dir's; raises if any is missing."""
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
            raise FileNotFoundError(f"{key}: no path given and micro_dir is unset")
        paths[key] = Path(value) if value is not None else micro / defaults[key]
        if not paths[key].exists():
            hint = f"; build the micro corpus: python -m doit.data micro --out {micro}" if (
                value is None) else ""  # fmt: skip
            raise FileNotFoundError(f"{key}: {paths[key]} does not exist{hint}")
    return paths


def read_documents(path: Path, text_field: str = "text") -> list[str]:
    """Non-empty documents of a .txt (one a line) or .jsonl/.json (one record a line) file."""
    path = Path(path)
    if path.suffix not in DATA_SUFFIXES:
        raise ValueError(f"{path}: expected one of {DATA_SUFFIXES}, got {path.suffix!r}")
    if path.suffix == ".txt":
        return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    docs = []
    for n, record in read_jsonl(path):
        if not isinstance(record.get(text_field), str):
            raise ValueError(f"{path}:{n}: no string field {text_field!r} (set text_field)")
        docs.append(record[text_field])
    return docs


def pack_documents(docs: list[str], tokenizer, block_size: int) -> torch.Tensor:
    """(n_blocks, block_size) token ids: each document + EOS, concatenated, tail dropped."""
    eos = tokenizer.eos_token_id
    if eos is None:
        raise ValueError("the tokenizer has no eos_token; pretraining needs one between documents")
    ids = tokenizer(docs, add_special_tokens=False)["input_ids"]
    flat = torch.tensor([t for doc in ids for t in (*doc, eos)], dtype=torch.long)
    n_blocks = len(flat) // block_size
    if n_blocks == 0:
        raise ValueError(f"{len(flat)} tokens make no block of {block_size}; lower block_size")
    return flat[: n_blocks * block_size].view(n_blocks, block_size)


class EpochPermutation(torch.utils.data.Sampler[int]):
    """Indices ``0..n-1`` in an order fixed by ``(seed, epoch)``: the same for every model
    trained with ``seed``, a new one each epoch. Trainer calls `set_epoch` before each epoch
    (through accelerate's shard wrappers when there are several ranks), so a resumed run replays
    the interrupted epoch's order."""

    def __init__(self, n: int, seed: int):
        self.n, self.seed, self.epoch = n, seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        generator = torch.Generator().manual_seed(self.seed)
        for _ in range(self.epoch + 1):  # epoch e takes the (e+1)-th draw of one seeded stream
            order = torch.randperm(self.n, generator=generator)
        return iter(order.tolist())


class BlockDataset(torch.utils.data.Dataset):
    """Packed blocks as causal-LM examples (labels = input ids; the model shifts them)."""

    def __init__(self, blocks: torch.Tensor):
        self.blocks = blocks

    def __len__(self) -> int:
        return len(self.blocks)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.blocks[i], "labels": self.blocks[i]}


def unigram_baseline(train: torch.Tensor, valid: torch.Tensor, vocab_size: int) -> dict:
    """The loss a model ignoring context would reach, in nats per token: the entropy of the
    training tokens' unigram distribution, and the valid tokens' cross-entropy under it (add-one
    smoothed, so a token unseen in training costs a finite loss). A ladder run must beat both."""
    counts = torch.bincount(train.flatten(), minlength=vocab_size).double()
    p = counts[counts > 0] / counts.sum()
    smoothed = (counts + 1) / (counts.sum() + vocab_size)
    return {
        "unigram_entropy": float(-(p * p.log()).sum()),
        "unigram_valid_loss": float(-smoothed.log()[valid.flatten()].mean()),
    }


def load_corpus(args: PretrainArguments, tokenizer) -> dict[str, BlockDataset]:
    paths = resolve_paths(args)
    train = pack_documents(
        read_documents(paths["train"], args.text_field), tokenizer, args.block_size
    )
    valid = pack_documents(
        read_documents(paths["valid"], args.text_field), tokenizer, args.block_size
    )
    return {"train": BlockDataset(train), "valid": BlockDataset(valid)}


# --- model -----------------------------------------------------------------------------------------
def model_config(args: PretrainArguments, tokenizer=None):
    """The ResFormerConfig of the run (without a tokenizer: a stand-in vocabulary, to validate)."""
    from doit.models import ResFormerConfig

    if args.hidden_size % args.num_attention_heads:
        raise ValueError(
            f"hidden_size {args.hidden_size} is not a multiple of num_attention_heads "
            f"{args.num_attention_heads}"
        )
    return ResFormerConfig(
        vocab_size=len(tokenizer) if tokenizer is not None else 8,
        hidden_size=args.hidden_size,
        intermediate_size=args.intermediate_size,
        num_hidden_layers=args.num_hidden_layers,
        num_attention_heads=args.num_attention_heads,
        num_key_value_heads=args.num_key_value_heads or args.num_attention_heads,
        max_position_embeddings=args.block_size,
        rope_parameters={"rope_type": "default", "rope_theta": args.rope_theta},
        tie_word_embeddings=args.tie_word_embeddings,
        bos_token_id=getattr(tokenizer, "bos_token_id", None),
        eos_token_id=getattr(tokenizer, "eos_token_id", None),
        pad_token_id=getattr(tokenizer, "pad_token_id", None),
        value_mode=args.value_mode,
        value_learnable=args.value_learnable,
        value_lambdas=tuple(args.value_lambdas),
    )


def build_model(args: PretrainArguments, tokenizer, seed: int):
    """A freshly initialised fp32 model (seeded; built whole, DeepSpeed partitions it later)."""
    from transformers import set_seed

    from doit.models import ResFormerForCausalLM

    set_seed(seed)
    config = model_config(args, tokenizer)
    config._attn_implementation = args.attn_implementation
    return ResFormerForCausalLM(config).float()


def parameter_counts(model) -> dict[str, int]:
    """Total (shared tensors once) and non-embedding (no input embedding, no LM head) counts."""
    unique = {id(p): p for p in model.parameters()}
    embedding = {id(model.get_input_embeddings().weight), id(model.get_output_embeddings().weight)}
    total = sum(p.numel() for p in unique.values())
    non_embedding = sum(p.numel() for i, p in unique.items() if i not in embedding)
    return {"params_total": total, "params_non_embedding": non_embedding}


# --- training --------------------------------------------------------------------------------------
class PretrainMetrics(TrainerCallback):
    """Writes metrics.jsonl on the main process: a start row, train/valid rows, tokens, wall time."""

    def __init__(self, output_dir, meta: dict):
        self.path = Path(output_dir) / METRICS
        self.meta = meta
        self.rows: list[dict] = []
        self.start = time.perf_counter()

    def row(self, kind: str, step: int, **values) -> dict:
        tokens = step * self.meta["tokens_per_step"]
        out = {"kind": kind, "step": step, "tokens": tokens,
               "wall_s": round(time.perf_counter() - self.start, 3), **values}  # fmt: skip
        self.rows.append(out)
        return out

    def write(self, row: dict, mode: str = "a") -> None:
        with self.path.open(mode, encoding="utf-8") as fh:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")

    def on_train_begin(self, args, state, control, **kwargs):
        self.start = time.perf_counter()
        if state.is_world_process_zero:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.write(self.row("start", 0, **self.meta, max_steps=state.max_steps), mode="w")

    def on_log(self, args, state, control, logs=None, **kwargs):
        logs = logs or {}
        if "loss" in logs:
            keep = {"loss": logs["loss"], "lr": logs.get("learning_rate"),
                    "grad_norm": logs.get("grad_norm")}  # fmt: skip
            row = self.row("train", state.global_step, **keep)
        elif "eval_loss" in logs:
            row = self.row("valid", state.global_step, loss=logs["eval_loss"])
        else:
            return
        if state.is_world_process_zero:
            self.write(row)

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


def check_training_args(training_args) -> None:
    """Raise for settings that break the ladder's guarantees (same data order for every arch)."""
    if training_args.train_sampling_strategy != "sequential":
        raise ValueError(
            f"train_sampling_strategy={training_args.train_sampling_strategy!r}: pretraining "
            "orders the blocks itself (EpochPermutation, by data_seed) and needs 'sequential'"
        )
    if training_args.bf16 or training_args.fp16:
        raise ValueError("bf16/fp16: the micro ladder trains in fp32 on CPU; set both false")


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
    _forget_previous_accelerator()
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


def _forget_previous_accelerator() -> None:
    """One process may train several runs (the ladder, the tests). accelerate refuses a second
    Accelerator with a DeepSpeed plugin, so drop the previous run's state; the process group
    (`PartialState`, prepared by `doit.train.launch`) stays."""
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(reset_partial_state=False)
    GradientState._reset_state()


def finish(trainer: PretrainTrainer) -> dict:
    """Final evaluation (unless the last step had one), model + tokenizer, end row, DONE."""
    metrics, step = trainer.metrics_callback, trainer.state.global_step
    if (metrics.last("valid") or {}).get("step") != step:
        trainer.evaluate()
    out = Path(trainer.args.output_dir)
    trainer.save_model(str(out))  # ZeRO-3: gathered (stage3_gather_16bit_weights_on_model_save)
    train = metrics.last("train") or {}
    end = metrics.row("end", step, **metrics.meta, valid_loss=metrics.last("valid")["loss"],
                      train_loss=train.get("loss"),
                      total_wall_s=round(time.perf_counter() - trainer.started, 3))  # fmt: skip
    if trainer.is_world_process_zero():
        metrics.write(end)
        write_json(out / DONE, end)
    log.info("%s: valid loss %.4f after %d tokens", out, end["valid_loss"], end["tokens"])
    return end


def pretrain(args: PretrainArguments, training_args) -> dict:
    """Train one base; returns its "end" row. A finished run (DONE) is read back, not redone."""
    out = Path(training_args.output_dir)
    if is_done(out):
        log.info("%s is finished (DONE); delete it to train again", out)
        return json.loads((out / DONE).read_text(encoding="utf-8"))
    trainer = build_trainer(args, training_args)
    trainer.train()
    return finish(trainer)


def read_metrics(run_dir) -> list[dict]:
    path = Path(run_dir) / METRICS
    return [row for _, row in read_jsonl(path)]


__all__ = [
    "BlockDataset",
    "PretrainArguments",
    "PretrainMetrics",
    "PretrainTrainer",
    "build_model",
    "pack_documents",
    "parameter_counts",
    "pretrain",
    "read_documents",
    "read_metrics",
    "resolve_paths",
]
