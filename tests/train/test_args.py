"""doit.train.sft.args and launch: validation names the key and what it allows; derived values."""

from types import SimpleNamespace

import pytest

from doit.train import launch
from doit.train.sft.args import (
    ConfigError,
    accumulation_steps,
    parse_args,
    resolve_schedule,
    steps_per_epoch,
)
from tests.tiny import FIXTURE
from tests.train.conftest import MICRO


def argv(**keys) -> list[str]:
    keys = {
        "doit_dir": FIXTURE,
        "per_ability": 1,
        "model_name_or_path": "/nonexistent/base",
        "output_dir": "/tmp/doit-never-written",
        **keys,
    }
    out = ["--config", str(MICRO)]
    for k, v in keys.items():
        out += [f"--{k}", str(v)]
    return out


@pytest.mark.parametrize(
    "keys, key, words",
    [
        ({"schedule": "weekly"}, "schedule", ["epochs, steps", "'weekly'"]),
        ({"chat_format": "chatml"}, "chat_format", ["doit, native"]),
        ({"pool": "500"}, "pool", ["1000, full"]),
        ({"mix": "recipes/mixes/baseline.yaml"}, "data", ["exactly one source"]),
        ({"doit_dir": "/nonexistent"}, "doit_dir", ["not a directory"]),
        ({"exclude_abilities": "poetry"}, "exclude_abilities", ["unknown ability 'poetry'"]),
        ({"global_batch_size": 6}, "global_batch_size", ["per_device_train_batch_size (4)"]),
        ({"min_steps": 10, "schedule": "steps"}, "min_steps", ["schedule: epochs only"]),
        ({"max_steps": 10}, "max_steps", ["schedule: epochs needs max_steps -1"]),
        ({"schedule": "steps"}, "max_steps", ["max_steps > 0"]),
        ({"save_strategy": "steps"}, "save_strategy", ["expected one of epoch"]),
        ({"packing": "true"}, "packing", ["FlashAttention", "group_by_length"]),
        ({"report_to": "tensorbored"}, "report_to", ["tensorboard", "'tensorbored'"]),
        ({"formulation": "cloze"}, "formulation", ["letter, text", "'cloze'"]),
    ],
)
def test_bad_keys_are_named_with_what_they_allow(keys, key, words):
    with pytest.raises(ConfigError) as err:
        parse_args(argv(**keys))
    assert err.value.key == key
    for w in words:
        assert w in str(err.value)


def test_gradient_accumulation_contradicting_global_batch():
    with pytest.raises(ConfigError, match="gradient_accumulation_steps: 3 contradicts"):
        parse_args(argv(gradient_accumulation_steps=3))


def test_unknown_yaml_or_flag_key_is_reported(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(MICRO.read_text() + "\nlearning_rat: 0.1\n")
    with pytest.raises(ConfigError, match="learning_rat"):
        parse_args(["--config", str(bad), *argv()[2:]])
    with pytest.raises(ConfigError, match="warmup_step: not a recipe key; did you mean warmup_st"):
        parse_args(argv(warmup_step=3))


def test_cpu_run_is_fp32_and_accumulation_comes_from_global_batch():
    args = parse_args(argv(global_batch_size=16, per_device_train_batch_size=2, bf16="true"))
    t = args.training
    assert t.gradient_accumulation_steps == 8 and t.use_cpu and not t.bf16 and not t.fp16
    assert args.model.dtype == "float32" and t.dataset_kwargs == {"skip_prepare_dataset": True}
    assert args.launch["launcher"] == "python" and args.launch["world_size"] == 1
    assert t.lr_scheduler_type.value == "polynomial" and t.lr_scheduler_kwargs["lr_end"] == 1e-4


def test_accumulation_steps():
    assert accumulation_steps(64, 4, 8) == 2 and accumulation_steps(64, 8, 8) == 1
    with pytest.raises(ConfigError, match="64 is not a positive multiple"):
        accumulation_steps(64, 3, 2)


def fake_args(schedule="epochs", epochs=15.0, max_steps=-1, min_steps=0, world=1):
    training = SimpleNamespace(
        per_device_train_batch_size=4,
        world_size=world,
        gradient_accumulation_steps=2,
        num_train_epochs=epochs,
        max_steps=max_steps,
    )
    return SimpleNamespace(
        training=training, run=SimpleNamespace(schedule=schedule, min_steps=min_steps)
    )


def test_schedule_epochs_steps_and_min_steps():
    assert steps_per_epoch(10, 4, 1, 2) == 2 and steps_per_epoch(64, 4, 2, 2) == 4
    plain = resolve_schedule(fake_args(), 10)
    assert plain["max_steps"] == 30 and not plain["epochs_raised_for_min_steps"]
    # n=1 per ability: 10 items, 2 steps an epoch; 15 epochs are 30 steps < 100
    args = fake_args(min_steps=100)
    raised = resolve_schedule(args, 10)
    assert raised["num_train_epochs"] == 50 and raised["max_steps"] == 100
    assert raised["epochs_raised_for_min_steps"] and args.training.num_train_epochs == 50
    steps = resolve_schedule(fake_args("steps", max_steps=60), 32)
    assert steps["steps_per_epoch"] == 4 and steps["num_train_epochs"] == 15


def test_world_size_mismatch_stops(monkeypatch):
    from accelerate.utils import DistributedType

    monkeypatch.setenv("WORLD_SIZE", "2")
    state = SimpleNamespace(distributed_type=DistributedType.NO)
    with pytest.raises(launch.LaunchError, match="started 2 processes .* world size of 1"):
        launch.check_world_size(SimpleNamespace(world_size=1, distributed_state=state), False)
    monkeypatch.setenv("WORLD_SIZE", "1")
    with pytest.raises(launch.LaunchError, match="not DeepSpeed"):
        launch.check_world_size(SimpleNamespace(world_size=1, distributed_state=state), True)


def test_launcher_detection_and_shm_name(monkeypatch):
    for k in ("CROSS_RANK", "LOCAL_SIZE", "TORCHELASTIC_RUN_ID"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("CROSS_RANK", "0")
    monkeypatch.setenv("LOCAL_SIZE", "2")
    assert launch.launcher() == "deepspeed"
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "29999")
    monkeypatch.setenv("RANK", "1")
    import os

    assert launch.shm_buffer().name == f"deepspeed_allreduce_buffer_{os.getuid()}_127.0.0.1_29999_1"


def test_missing_report_backend_or_bitsandbytes_is_named(monkeypatch):
    import importlib.util
    import sys

    if importlib.util.find_spec("tensorboard") is None:
        with pytest.raises(ConfigError, match="report_to: tensorboard is not installed"):
            parse_args(argv(report_to="tensorboard"))
    monkeypatch.setitem(sys.modules, "bitsandbytes", None)  # as if not installed
    with pytest.raises(ConfigError, match="load_in_4bit: QLoRA needs bitsandbytes"):
        parse_args(argv(use_peft="true", load_in_4bit="true"))
    with pytest.raises(ConfigError, match="quantised bases train adapters only"):
        parse_args(argv(load_in_4bit="true"))


def test_the_formulation_is_a_data_key_and_letter_stays_out_of_the_identity():
    from doit.train.sft.args import training_identity

    assert parse_args(argv()).data.formulation == "letter"
    assert parse_args(argv(formulation="text")).data.formulation == "text"
    cfg = {"learning_rate": 1e-3, "per_ability": 4}
    assert training_identity({**cfg, "formulation": "letter"}) == training_identity(cfg)
    assert training_identity({**cfg, "formulation": "text"})["formulation"] == "text"
