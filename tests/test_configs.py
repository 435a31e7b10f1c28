"""Every shipped config parses; SFT configs load through the recipe's parser, warnings as errors."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from doit.io import parse_yaml

REPO = Path(__file__).resolve().parents[1]
RECIPES = REPO / "recipes"
SFT_CONFIGS = sorted((RECIPES / "configs" / "sft").rglob("*.yaml"))
DEEPSPEED = sorted((RECIPES / "deepspeed").glob("*.json"))
SECTIONS = [
    "output",
    "tokenizer",
    "data",
    "model",
    "checkpointing",
    "optimisation",
    "environment",
    "memory",
    "precision",
    "logging",
]


@pytest.mark.parametrize(
    "path",
    sorted(RECIPES.rglob("*.yaml")) + sorted(RECIPES.rglob("*.json")),
    ids=lambda p: str(p.relative_to(RECIPES)),
)
def test_every_yaml_and_json_under_recipes_parses(path):
    text = path.read_text(encoding="utf-8")
    data = json.loads(text) if path.suffix == ".json" else parse_yaml(text, str(path))
    assert isinstance(data, dict) and data  # parse_yaml: no key given twice


def test_every_shipped_mix_draws_within_the_real_doit_pools():
    """Each mix parses, names a train pool, and resolves against that pool's real sizes (the
    1000 pool: 1,000 an ability; full: recipes/mixes/README.md) with >= 1 item per ability it
    draws: parsing alone would not catch a count or fill total the corpus cannot give."""
    from doit.data.layout import TRAIN_POOLS
    from doit.data.mixes import load_mix, resolve_counts
    from tests.data.pools import DOIT_FULL

    pools = {"1000": {k: min(n, 1000) for k, n in DOIT_FULL.items()}, "full": DOIT_FULL}
    paths = sorted((RECIPES / "mixes").glob("*.yaml"))
    assert len(paths) == 5, [p.name for p in paths]  # a moved folder would check nothing
    for path in paths:
        spec = load_mix(path)
        assert spec.path == str(path) and spec.source in TRAIN_POOLS, path.name
        counts = resolve_counts(spec, pools[spec.source])
        assert counts and min(counts.values()) >= 1, (path.name, counts)


@pytest.mark.parametrize("path", DEEPSPEED, ids=lambda p: p.name)
def test_deepspeed_configs_leave_optimiser_and_schedule_to_the_trainer(path):
    config = json.loads(path.read_text())
    assert "optimizer" not in config and "scheduler" not in config
    for key in (
        "train_batch_size",
        "train_micro_batch_size_per_gpu",
        "gradient_accumulation_steps",
        "gradient_clipping",
    ):
        assert config[key] == "auto", key
    assert config["bf16"]["enabled"] == config["fp16"]["enabled"] == "auto"
    zero = config["zero_optimization"]
    assert zero["reduce_bucket_size"] == "auto"
    if zero["stage"] == 3:
        assert zero["stage3_gather_16bit_weights_on_model_save"] is True
        assert (
            zero["stage3_prefetch_bucket_size"]
            == zero["stage3_param_persistence_threshold"]
            == "auto"
        )


@pytest.mark.parametrize("path", SFT_CONFIGS, ids=lambda p: str(p.relative_to(RECIPES)))
def test_sft_config_documents_itself(path):
    lines = path.read_text(encoding="utf-8").splitlines()
    header = [ln for ln in lines[: lines.index(next(ln for ln in lines if not ln.startswith("#")))]]
    assert any("recipes/sft.py" in ln and "--config" in "".join(header) for ln in header), (
        "launch command"
    )
    sections = [m.group(1) for ln in lines if (m := re.match(r"# ---- (\w+)", ln))]
    assert sections == SECTIONS
    for ln in lines:
        if ln.strip() and not ln.lstrip().startswith("#"):
            assert " # " in ln or ln.rstrip().endswith("#"), f"key without a comment: {ln!r}"


PARSE_ALL = r"""
import sys, warnings, yaml
import deepspeed, transformers.integrations.deepspeed, trl  # import-time warnings are not config's
from trl import SFTConfig
from doit.train.sft.args import parse_args
fixture, out, *configs = sys.argv[1:]
uses_ds = lambda c: bool(yaml.safe_load(open(c)).get("deepspeed"))
for config in sorted(configs, key=uses_ds):  # DeepSpeed's process state last: it stays
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        warnings.simplefilter("error", DeprecationWarning)
        args = parse_args(["--config", config, "--model_name_or_path", "unused",
                           "--doit_dir", fixture, "--per_ability", "1", "--output_dir", out])
    assert args.training.save_strategy.value == "epoch", config
    print("ok", config, args.training.gradient_accumulation_steps, flush=True)
"""


def test_sft_configs_load_through_the_recipe_parser_with_warnings_as_errors(tmp_path):
    fixture = REPO / "tests" / "fixtures" / "doit_download"
    cmd = [
        sys.executable,
        "-c",
        PARSE_ALL,
        str(fixture),
        str(tmp_path / "out"),
        *map(str, SFT_CONFIGS),
    ]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.count("ok ") == len(SFT_CONFIGS)


def test_full_configs_are_the_studys_recipe():
    for size in ("7b", "13b", "33b"):
        c = yaml.safe_load(
            (RECIPES / "configs" / "sft" / f"chinese-llama-plus-{size}" / "full.yaml").read_text()
        )
        assert (c["adam_beta1"], c["adam_beta2"], c["adam_epsilon"], c["weight_decay"]) == (
            0.9,
            0.95,
            1e-8,
            0.1,
        )
        assert (c["max_grad_norm"], c["learning_rate"], c["global_batch_size"]) == (1.0, 1e-5, 64)
        assert c["lr_scheduler_type"] == "polynomial"
        assert c["lr_scheduler_kwargs"] == {"lr_end": 1e-6, "power": 1.0}
        assert (c["max_length"], c["num_train_epochs"], c["seed"], c["save_strategy"]) == (
            2048,
            15,
            0,
            "epoch",
        )
        assert c["activation_checkpointing"] and c["bf16"] and not c["fp16"] and not c["use_peft"]
        assert c["assistant_only_loss"] and c["chat_format"] == "doit"


# --- the model directories the docs' commands name ----------------------------------------------
COMMAND_DOCS = [
    REPO / "README.md",
    RECIPES / "README.md",
    RECIPES / "sft.py",
    RECIPES / "pretrain.py",
    *sorted((RECIPES / "configs").rglob("*.yaml")),
]
MODEL_FLAG = re.compile(r"--model(?:_name_or_path)? +([\w./-]+)")
OUTPUT_FLAG = re.compile(r"--output_dir +([\w./-]+)")


def _created_dirs() -> set[str]:
    """Directories a documented command writes a model to: every ``--output_dir`` in the docs,
    the pretraining configs' ``output_dir`` and `make ladder`'s bases (recipes/grids/ladder.yaml
    under ``$(LADDER_DIR)``, seed 0)."""
    from doit.grid.spec import load_grid

    out = {d for doc in COMMAND_DOCS for d in OUTPUT_FLAG.findall(doc.read_text(encoding="utf-8"))}
    for config in (RECIPES / "configs" / "pretrain").glob("*.yaml"):
        out.add(yaml.safe_load(config.read_text())["output_dir"])
    ladder_dir = re.search(r"^LADDER_DIR \?= (\S+)$", (REPO / "Makefile").read_text(), re.M)[1]
    ladder = load_grid(RECIPES / "grids" / "ladder.yaml", {"bases_dir": ladder_dir})
    out |= {b.at_seed(0).path for b in ladder.bases}
    return out


def test_every_model_dir_a_documented_command_names_is_one_a_documented_command_creates():
    """A repo-relative ``--model``/``--model_name_or_path`` in the docs is a folder that some
    documented command creates (a placeholder such as /models/... or DIR is not checked)."""
    created = _created_dirs()
    named = {
        (doc.relative_to(REPO).as_posix(), path)
        for doc in COMMAND_DOCS
        for path in MODEL_FLAG.findall(doc.read_text(encoding="utf-8"))
        if not path.startswith("/") and "/" in path
    }
    assert named  # the docs do show such commands
    assert sorted(p for p in named if p[1] not in created) == []


def test_the_cpu_lock_pins_every_package_but_torch_which_the_makefile_pins():
    """constraints-cpu.txt: one `name==version` per package (after its comment header), the
    libraries a micro base's weights depend on among them; torch is the Makefile's own pin."""
    lines = [x for x in (REPO / "constraints-cpu.txt").read_text().splitlines() if x]
    pins = [x for x in lines if not x.startswith("#")]
    assert pins and all(re.fullmatch(r"[A-Za-z0-9_.\-]+==[A-Za-z0-9_.+!\-]+", x) for x in pins)
    names = {x.split("==")[0].lower().replace("_", "-") for x in pins}
    assert len(names) == len(pins)  # no package twice
    assert {"transformers", "tokenizers", "trl", "accelerate", "numpy"} <= names
    assert "torch" not in names
    makefile = (REPO / "Makefile").read_text()
    assert "pip install -q torch==2.13.0" in makefile
    assert "-c constraints-cpu.txt" in makefile
