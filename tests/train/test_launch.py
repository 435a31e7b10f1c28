"""Every launch form of the recipe on CPU: deepspeed (two ranks, ZeRO-3), torchrun with two
ranks, plain python with a DeepSpeed config, two `deepspeed --no_ssh` nodes as under Slurm
(ZeRO-2), and a refused accelerate launch."""

import json
import os
import subprocess
from pathlib import Path

import pytest
from transformers import AutoModelForCausalLM

from doit.train.launch import SHM_DIR, SHM_PREFIX, free_port
from doit.train.optim import no_decay_parameter_names
from tests.conftest import POOLS
from tests.tiny import REPO
from tests.train.conftest import BIN, PY, RECIPE, env_for, recipe_args, run_recipe, train_logs

pytestmark = [pytest.mark.slow, POOLS]
ZERO2 = REPO / "recipes" / "deepspeed" / "zero2.json"
ZERO3 = REPO / "recipes" / "deepspeed" / "zero3.json"


def shm_buffers(port: int) -> list[Path]:
    return sorted(SHM_DIR.glob(f"{SHM_PREFIX}_{os.getuid()}_*_{port}_*"))


def run_info(out: Path) -> dict:
    return json.loads((out / "run_info.json").read_text())


def deepspeed(port: int, ranks: int | None = None) -> list[str]:
    cmd = [str(BIN / "deepspeed"), "--master_port", str(port)]
    return [*cmd, "--num_gpus", str(ranks)] if ranks else cmd


@pytest.fixture()
def port():
    p = free_port()
    yield p
    for leftover in shm_buffers(p):  # a failed run must not leave its 66 MB buffers behind
        leftover.unlink(missing_ok=True)


def check_two_ranks(out: Path, arch: str, port: int) -> None:
    """A two-rank DeepSpeed run of 2 epochs: its steps, schedule, both ranks' tokens, a model
    that reloads, and doit's optimiser groups (by name) whatever ZeRO stage held the weights."""
    info = run_info(out)
    assert info["launch"]["launcher"] == "deepspeed" and info["launch"]["deepspeed"]
    assert (
        info["launch"]["world_size"] == 2
        and info["config"]["training"]["gradient_accumulation_steps"] == 1
    )
    logs = train_logs(out)
    assert [r["step"] for r in logs] == [1, 2, 3, 4]  # 10 items, 2 ranks x 4: 2 steps an epoch
    assert logs[-1]["assistant_tokens_seen"] > 300  # both ranks' tokens are counted
    # the YAML's polynomial decay to lr_end applies under DeepSpeed (no scheduler block)
    assert logs[-1]["learning_rate"] == pytest.approx(1e-4 + (1e-3 - 1e-4) / 4)
    model = AutoModelForCausalLM.from_pretrained(out)  # ZeRO-3: gathered 16-bit weights reload
    assert model.get_input_embeddings().num_embeddings == 387
    assert info["model"]["model_type"] == arch
    # ZeRO-3 loads the base partitioned (every tensor empty and 1-D): the groups, by name, must
    # still be those of the same model built whole
    decay, no_decay = info["optimizer_groups"]
    assert (decay["weight_decay"], no_decay["weight_decay"]) == (0.1, 0.0)
    expected_no_decay = no_decay_parameter_names(model)
    assert set(no_decay["params"]) == expected_no_decay
    assert set(decay["params"]) == {n for n, _ in model.named_parameters()} - expected_no_decay
    assert "model.layers.0.self_attn.q_proj.weight" in decay["params"]
    if arch == "resformer":
        scalars = [n for n in no_decay["params"] if n.endswith(("value_lambda1", "value_lambda2"))]
        norms = [n for n in no_decay["params"] if "norm" in n]
        assert scalars and len(norms) == 5 and set(no_decay["params"]) == set(scalars + norms)
        assert not any("norm" in n or "lambda" in n for n in decay["params"])
    assert (out / "DONE").is_file() and not shm_buffers(port)


def test_deepspeed_two_ranks_zero3(base, tmp_path, cache_dir, port):
    """Two ranks under ZeRO-3, a Llama base loaded partitioned. (ZeRO-2 with a ResFormer base,
    whose norms and mixing scalars get no decay: the two-node test below.)"""
    out = tmp_path / "run"
    run_recipe(
        deepspeed(port, 2), recipe_args(base, out, num_train_epochs=2, deepspeed=ZERO3), cache_dir
    )
    check_two_ranks(out, "llama", port)


def test_torchrun_two_ranks(base, tmp_path, cache_dir, port):
    out = tmp_path / "run"
    torchrun = [str(BIN / "torchrun"), "--nproc_per_node", "2", "--master_port", str(port)]
    run_recipe(torchrun, recipe_args(base, out, num_train_epochs=2), cache_dir)
    info = run_info(out)
    assert info["launch"]["launcher"] == "torchrun" and info["launch"]["world_size"] == 2
    assert [r["step"] for r in train_logs(out)] == [1, 2, 3, 4]
    assert info["config"]["training"]["use_cpu"]


def test_python_with_a_deepspeed_config_runs_as_one_process(base, tmp_path, cache_dir):
    out = tmp_path / "run"
    run_recipe(PY, recipe_args(base, out, num_train_epochs=1, deepspeed=ZERO2), cache_dir)
    launch = run_info(out)["launch"]
    assert launch["deepspeed"] and sorted(launch["env_added"]) == [
        "LOCAL_RANK",
        "MASTER_ADDR",
        "MASTER_PORT",
        "RANK",
        "WORLD_SIZE",
    ]
    assert (out / "DONE").is_file()


def test_accelerate_launch_cpu_with_deepspeed_is_refused(base, tmp_path, cache_dir):
    out = tmp_path / "run"
    accelerate = [str(BIN / "accelerate"), "launch", "--cpu", "--num_processes", "2"]
    argv = recipe_args(base, out, num_train_epochs=1, deepspeed=ZERO2)
    proc = run_recipe(accelerate, argv, cache_dir, check=False)
    assert proc.returncode != 0
    assert "`accelerate launch` without its DeepSpeed plugin" in proc.stderr
    assert not out.exists()


def test_two_nodes_without_ssh_as_under_slurm(resformer_base, tmp_path, cache_dir, port):
    """recipes/README.md's Slurm form: one `deepspeed --no_ssh` per node (here two on one host),
    under ZeRO-2, with a ResFormer base (its norms and mixing scalars get no decay)."""
    out, hostfile = tmp_path / "run", tmp_path / "hostfile"
    hostfile.write_text("localhost slots=1\n127.0.0.1 slots=1\n")
    argv = recipe_args(resformer_base, out, num_train_epochs=2, deepspeed=ZERO2)
    procs = []
    for node in (0, 1):
        cmd = [
            str(BIN / "deepspeed"),
            "--no_ssh",
            "--hostfile",
            str(hostfile),
            "--node_rank",
            str(node),
            "--master_addr",
            "127.0.0.1",
            "--master_port",
            str(port),
            str(RECIPE),
            *argv,
        ]
        procs.append(
            subprocess.Popen(
                cmd,
                cwd=REPO,
                env=env_for(cache_dir),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
    logs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], logs[0][-3000:] + logs[1][-3000:]
    check_two_ranks(out, "resformer", port)
