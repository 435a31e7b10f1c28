"""Micro pretraining (doit.train.pretrain: its command, which recipes/pretrain.py runs, and the
ladder's size configs).

The DeepSpeed test launches this file as its worker: ``deepspeed --num_gpus 2
tests/train/test_pretrain.py RESULTS_DIR ARGS_JSON`` (two CPU ranks, ZeRO-3).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from doit.train import pretrain
from doit.train.errors import ConfigError
from tests.conftest import POOLS

pytestmark = pytest.mark.filterwarnings(
    "ignore:`torch.jit.script_method` is deprecated:DeprecationWarning"
)
REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "recipes" / "configs" / "pretrain"
SIZES = ["xs", "s", "m", "l"]  # the size configs, smallest first
TINY_MODEL = [
    "--block_size",
    "32",
    "--hidden_size",
    "32",
    "--intermediate_size",
    "64",
    "--num_attention_heads",
    "2",
    "--num_hidden_layers",
    "4",
]
MODES = {  # name: (config arch, extra flags)
    "vanilla": ("vanilla", []),
    "resformer": ("resformer", []),
    "resformer_learnable": ("resformer", ["--value_learnable", "true"]),
    "svformer": ("svformer", []),
}


NUMERALS = "一二三四五六七八九十"


@pytest.fixture(scope="module")
def tiny_corpus(micro_dir, tmp_path_factory):
    """A tiny learnable text (numerals counted from each start, train = valid) and the micro
    tokenizer (one token per character)."""
    out = tmp_path_factory.mktemp("tiny_corpus")
    lines = [(NUMERALS[i % 10 :] + NUMERALS[: i % 10]) * 2 + "。" for i in range(200)]
    (out / "tiny.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {"text": out / "tiny.txt", "tokenizer": micro_dir / "tokenizer"}


def _tiny_argv(corpus, mode, out, *extra) -> list[str]:
    arch, flags = MODES[mode]
    return [
        "--config",
        str(CONFIGS / "xs.yaml"),
        "--value_mode",
        arch,
        "--output_dir",
        str(out),
        "--train_file",
        str(corpus["text"]),
        "--valid_file",
        str(corpus["text"]),
        "--tokenizer_path",
        str(corpus["tokenizer"]),
        *TINY_MODEL,
        *flags,
        *extra,
    ]


# --- data --------------------------------------------------------------------------------------
def test_read_documents_txt_and_jsonl(tmp_path):
    from doit.train.pretrain import read_documents

    (tmp_path / "a.txt").write_text("一\n\n二 三\n", encoding="utf-8")
    assert read_documents(tmp_path / "a.txt") == ["一", "二 三"]
    (tmp_path / "b.jsonl").write_text('{"body": "甲"}\n\n{"body": "乙"}\n', encoding="utf-8")
    assert read_documents(tmp_path / "b.jsonl", "body") == ["甲", "乙"]
    with pytest.raises(ValueError, match=r"b.jsonl:1: no string field 'text'"):
        read_documents(tmp_path / "b.jsonl")
    with pytest.raises(ValueError, match="expected one of"):
        read_documents(tmp_path / "c.csv")


def test_pack_documents_eos_between_and_tail_dropped(tiny_corpus):
    from transformers import AutoTokenizer

    from doit.train.pretrain import pack_documents

    tok = AutoTokenizer.from_pretrained(tiny_corpus["tokenizer"])
    docs = ["春天来了。", "小明说：“好。”", "三"]
    ids = [tok(d, add_special_tokens=False)["input_ids"] for d in docs]
    flat = [t for doc in ids for t in (*doc, tok.eos_token_id)]
    blocks = pack_documents(docs, tok, block_size=4)
    assert blocks.shape == (len(flat) // 4, 4)
    assert blocks.flatten().tolist() == flat[: blocks.numel()]
    with pytest.raises(ValueError, match="no block of 1000"):
        pack_documents(docs, tok, block_size=1000)


def test_epoch_permutation_same_per_seed_new_per_epoch():
    from doit.train.pretrain import EpochPermutation

    def order(seed, epoch):
        sampler = EpochPermutation(50, seed)
        sampler.set_epoch(epoch)
        return list(sampler)

    assert sorted(order(3, 0)) == list(range(50)) and len(EpochPermutation(50, 3)) == 50
    assert order(3, 0) == order(3, 0) and order(3, 1) == order(3, 1)
    assert order(3, 0) != order(3, 1) != order(4, 1) and order(3, 0) != order(4, 0)
    # epoch 0 is torch.randperm under manual_seed(seed), as the ladder's first epoch always was
    assert order(3, 0) == torch.randperm(50, generator=torch.Generator().manual_seed(3)).tolist()


def test_trainer_reads_a_new_permutation_each_epoch(tiny_corpus, tmp_path, monkeypatch):
    """Trainer swaps in EpochPermutation and calls set_epoch; every arch of a seed gets the same."""
    from doit.train.pretrain import EpochPermutation

    seen = []
    original = EpochPermutation.__iter__

    def recording_iter(self):
        order = list(original(self))
        seen.append((self.seed, self.epoch, order))
        return iter(order)

    monkeypatch.setattr(EpochPermutation, "__iter__", recording_iter)
    for mode in ("vanilla", "svformer"):
        argv = _tiny_argv(
            tiny_corpus,
            mode,
            tmp_path / mode,
            "--num_train_epochs",
            "2",
            "--per_device_train_batch_size",
            "4",
            "--eval_strategy",
            "no",
        )
        assert pretrain.main(argv) == 0
    assert [(seed, epoch) for seed, epoch, _ in seen] == [(0, 0), (0, 1)] * 2
    assert seen[0][2] == seen[2][2] and seen[1][2] == seen[3][2]  # the same for both archs
    assert seen[0][2] != seen[1][2] and sorted(seen[0][2]) == sorted(seen[1][2])


def test_missing_corpus_says_how_to_build_it(tmp_path):
    from doit.train.pretrain import PretrainArguments, resolve_paths

    with pytest.raises(ConfigError, match="python -m doit.data micro --out"):
        resolve_paths(PretrainArguments(micro_dir=str(tmp_path / "nowhere")))


# --- configs and model sizes -------------------------------------------------------------------
def test_every_config_parses_and_comments_every_key(tiny_corpus, tmp_path):
    from doit.train.pretrain import parse_args

    paths = sorted(CONFIGS.glob("*.yaml"))
    assert sorted(p.stem for p in paths) == sorted(SIZES)  # one per size, the arch an override
    for path in paths:
        keys = [
            ln for ln in path.read_text().splitlines() if ln and not ln.lstrip().startswith("#")
        ]
        assert all("  # " in ln for ln in keys), f"{path.name}: a key without a comment"
        parsed = parse_args(["--config", str(path), "--output_dir", str(tmp_path)])
        args, training = parsed.model, parsed.training
        assert (args.value_mode, args.size) == ("vanilla", path.stem)
        assert training.lr_scheduler_type == "cosine_with_min_lr"
        assert training.lr_scheduler_kwargs == {"min_lr_rate": 0.1}
        assert (training.adam_beta1, training.adam_beta2, training.weight_decay) == (0.9, 0.95, 0.1)
        assert training.max_grad_norm == 1.0 and training.train_sampling_strategy == "sequential"


def test_ladder_sizes(tiny_corpus):
    from transformers import AutoTokenizer

    from doit.grid.spec import load_grid
    from doit.train.pretrain import build_model, parameter_counts, parse_args

    ladder = load_grid(REPO / "recipes" / "grids" / "ladder.yaml")
    default_sizes = sorted({Path(b.pretrain.config).stem for b in ladder.bases}, key=SIZES.index)

    tok = AutoTokenizer.from_pretrained(tiny_corpus["tokenizer"])
    counts = {}
    for size in SIZES:
        args = parse_args(["--config", str(CONFIGS / f"{size}.yaml")]).model
        assert args.num_hidden_layers >= 4
        model = build_model(args, tok, seed=0)
        counts[size] = parameter_counts(model)["params_non_embedding"]
        embeddings = 2 * len(tok) * args.hidden_size  # untied input embedding + LM head
        assert parameter_counts(model)["params_total"] == counts[size] + embeddings
    assert len(tok) <= 4096
    assert 150_000 <= counts["xs"] <= 250_000 and 1_400_000 <= counts["l"] <= 2_000_000
    assert counts["l"] / counts["xs"] >= 8
    assert default_sizes == ["xs", "s", "l"]
    assert counts[default_sizes[-1]] / counts[default_sizes[0]] >= 8  # the default ladder spans 8x


def test_parameter_counts_tied():
    from doit.testing import tiny_model
    from doit.train.pretrain import parameter_counts

    model = tiny_model("resformer", tie_word_embeddings=True)
    counts = parameter_counts(model)
    embedding = model.get_input_embeddings().weight.numel()
    assert counts["params_total"] == sum(p.numel() for p in model.parameters())
    assert counts["params_non_embedding"] == counts["params_total"] - embedding


def test_unigram_baseline_by_hand():
    import math

    from doit.train.pretrain import unigram_baseline

    train = torch.tensor([[0, 0, 1, 2]])  # p = (1/2, 1/4, 1/4, 0)
    valid = torch.tensor([[1, 3]])  # add-one: counts (3, 2, 2, 1) / 8
    out = unigram_baseline(train, valid, vocab_size=4)
    assert out["unigram_entropy"] == pytest.approx(-(0.5 * math.log(0.5) + 0.5 * math.log(0.25)))
    assert out["unigram_valid_loss"] == pytest.approx(-(math.log(2 / 8) + math.log(1 / 8)) / 2)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--train_sampling_strategy", "random"], "needs 'sequential'"),
        (["--value_mode", "bogus"], "value_mode must be one of"),
        (["--value_learnable", "true"], "value_learnable=True needs value_mode='resformer'"),
        (["--num_attention_heads", "3"], "not a multiple of num_attention_heads"),
    ],
)
def test_bad_configs_fail_at_parse_time(flags, message, tiny_corpus, tmp_path):
    from doit.train.pretrain import parse_args

    with pytest.raises(ConfigError, match=message):
        parse_args(_tiny_argv(tiny_corpus, "vanilla", tmp_path, *flags))


# --- the command, end to end -------------------------------------------------------------------
@pytest.mark.parametrize("mode", list(MODES))
def test_pretrain_command_end_to_end(mode, tiny_corpus, tmp_path, capsys):
    from transformers import AutoModelForCausalLM

    import doit.models  # noqa: F401

    out = tmp_path / "run"
    argv = _tiny_argv(
        tiny_corpus,
        mode,
        out,
        "--max_steps",
        "4",
        "--per_device_train_batch_size",
        "4",
        "--logging_steps",
        "2",
        "--eval_steps",
        "3",
    )
    assert pretrain.main(argv) == 0
    for name in ("model.safetensors", "config.json", "tokenizer.json", "metrics.jsonl", "DONE"):
        assert (out / name).is_file(), name
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["kind"] for r in rows] == ["start", "train", "valid", "train", "valid", "end"]
    assert [r["step"] for r in rows] == [0, 2, 3, 4, 4, 4]
    end = rows[-1]
    assert end["tokens"] == 4 * 4 * 32 and end["valid_loss"] == rows[-2]["loss"]
    assert end["params_non_embedding"] < end["params_total"] and end["wall_s"] > 0
    assert end["unigram_valid_loss"] > 0 and end["unigram_entropy"] > 0
    done = json.loads((out / "DONE").read_text())  # what built the base: its install too
    assert done["versions"]["torch"].split("+")[0] == torch.__version__.split("+")[0]
    assert end["arch"] == ("resformer_learnable" if mode == "resformer_learnable" else mode)
    model = AutoModelForCausalLM.from_pretrained(out)
    assert model.config.value_mode == MODES[mode][0]
    # finished: the same command does not train again
    before = (out / "metrics.jsonl").read_text()
    assert pretrain.main(argv) == 0
    assert (out / "metrics.jsonl").read_text() == before


# --- DeepSpeed ZeRO-3, two CPU ranks -----------------------------------------------------------
ZERO3 = {  # no optimizer/scheduler block: transformers builds doit's groups and the schedule
    "zero_optimization": {
        "stage": 3,
        "stage3_gather_16bit_weights_on_model_save": True,
        "stage3_param_persistence_threshold": 0,  # partition even the tiny model's small tensors
    },
    "train_micro_batch_size_per_gpu": "auto",
    "train_batch_size": "auto",
    "gradient_accumulation_steps": "auto",
    "gradient_clipping": "auto",
    "bf16": {"enabled": False},
    "fp16": {"enabled": False},
}
DS_MODES = ("vanilla", "resformer_learnable", "svformer")
PROBE = [[5, 17, 300, 42, 8, 99, 1, 250, 7, 3, 64, 128]]  # token ids for the logits check


def _deepspeed_worker(results: Path, spec_path: Path) -> None:
    """On every rank: train each mode 30 steps, then save (rank 0) logits and optimiser groups."""
    from doit.train.launch import cleanup_shm
    from doit.train.pretrain import build_trainer, finish, parse_args

    spec = json.loads(spec_path.read_text())
    try:
        for mode, argv in spec.items():
            parsed = parse_args(argv)
            trainer = build_trainer(parsed.model, parsed.training)
            trainer.train()
            finish(trainer)
            engine = trainer.model_wrapped
            engine.eval()
            with torch.no_grad():  # every rank runs the forward: ZeRO-3 gathers the weights
                logits = engine(input_ids=torch.tensor(PROBE)).logits
            if trainer.is_world_process_zero():
                torch.save(logits, results / f"{mode}_logits.pt")
                (results / f"{mode}.json").write_text(json.dumps(_optimizer_info(trainer)))
    finally:
        cleanup_shm()


def _optimizer_info(trainer) -> dict:
    zero = trainer.model_wrapped.optimizer  # DeepSpeedZeroOptimizer_Stage3
    names = {id(p): n for n, p in trainer.model.named_parameters()}
    return {
        "engine": type(trainer.model_wrapped).__name__,
        "zero_stage": trainer.model_wrapped.zero_optimization_stage(),
        "created": trainer.optimizer_groups,
        "zero_groups": [[names[id(p)] for p in group] for group in zero.fp16_groups],
        "zero_weight_decay": [g["weight_decay"] for g in zero.optimizer.param_groups],
        "partitioned": [n for n, p in trainer.model.named_parameters() if _partitioned(p)],
        "params": [n for n, _ in trainer.model.named_parameters()],
    }


def _partitioned(param) -> bool:
    """A ZeRO-3 parameter that is not kept whole between uses (its data is released)."""
    return hasattr(param, "ds_tensor") and param.data.numel() == 0


def _shm_buffers(port: int) -> list[Path]:
    from doit.train.launch import SHM_DIR, SHM_PREFIX

    return sorted(SHM_DIR.glob(f"{SHM_PREFIX}_{os.getuid()}_*_{port}_*"))


@pytest.mark.slow
@POOLS
def test_deepspeed_zero3_two_cpu_ranks(tiny_corpus, tmp_path):
    import doit.models  # noqa: F401
    from doit.train.launch import free_port

    (tmp_path / "zero3.json").write_text(json.dumps(ZERO3))
    flags = [
        "--deepspeed",
        str(tmp_path / "zero3.json"),
        "--max_steps",
        "30",
        "--learning_rate",
        "1e-2",
        "--warmup_steps",
        "3",
        "--per_device_train_batch_size",
        "4",
        "--logging_steps",
        "10",
        "--eval_steps",
        "30",
        "--eval_on_start",
        "true",
    ]
    spec = {m: _tiny_argv(tiny_corpus, m, tmp_path / m, *flags) for m in DS_MODES}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "OMP_NUM_THREADS": "1",
        "TORCH_EXTENSIONS_DIR": os.environ.get(
            "TORCH_EXTENSIONS_DIR", str(Path(sys.prefix) / "torch_extensions")
        ),
    }
    env.pop("WORLD_SIZE", None)
    cmd = [
        str(Path(sys.executable).parent / "deepspeed"),
        "--master_port",
        str(port),
        "--num_gpus",
        "2",
        __file__,
        str(tmp_path),
        str(tmp_path / "spec.json"),
    ]
    try:
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
        assert not _shm_buffers(port), "the ranks left their /dev/shm buffers behind"
    finally:
        for leftover in _shm_buffers(port):
            leftover.unlink(missing_ok=True)
    for mode in DS_MODES:
        _check_zero3_run(mode, tmp_path)


def _check_zero3_run(mode: str, root: Path) -> None:
    from transformers import AutoModelForCausalLM

    rows = [json.loads(line) for line in (root / mode / "metrics.jsonl").read_text().splitlines()]
    valid = [r for r in rows if r["kind"] == "valid"]
    assert [r["step"] for r in valid] == [0, 30] and rows[0]["world_size"] == 2
    assert valid[-1]["loss"] <= 0.7 * valid[0]["loss"], (mode, valid)
    info = json.loads((root / f"{mode}.json").read_text())
    assert info["engine"] == "DeepSpeedEngine" and info["zero_stage"] == 3
    assert info["partitioned"] == info["params"]  # every tensor is split over the two ranks
    decay, no_decay = info["created"]
    assert (decay["weight_decay"], no_decay["weight_decay"]) == (0.1, 0.0)
    assert info["zero_weight_decay"] == [0.1, 0.0]
    assert info["zero_groups"] == [decay["params"], no_decay["params"]]
    model = AutoModelForCausalLM.from_pretrained(root / mode).eval()
    assert next(model.parameters()).dtype == torch.float32
    scalars = {n: p.item() for n, p in model.named_parameters() if "value_lambda" in n}
    if mode == "resformer_learnable":
        assert len(scalars) == 6 and set(scalars) <= set(no_decay["params"])
        assert all(abs(v - 0.5) > 1e-3 for v in scalars.values()), scalars
    else:
        assert not scalars
    with torch.no_grad():
        reloaded = model(input_ids=torch.tensor(PROBE)).logits
    torch.testing.assert_close(reloaded, torch.load(root / f"{mode}_logits.pt"), atol=1e-6, rtol=0)


if __name__ == "__main__":  # the DeepSpeed worker (see the module docstring)
    _deepspeed_worker(Path(sys.argv[-2]), Path(sys.argv[-1]))
