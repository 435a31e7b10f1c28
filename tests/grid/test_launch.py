"""The commands a cell's training is launched with, multi-node included, asserted exactly."""

from __future__ import annotations

import sys

from doit.grid.cell import launch_command, write_hostfile


def test_single_node_commands():
    assert launch_command("python", "c.yaml") == [
        sys.executable,
        "-m",
        "doit",
        "sft",
        "--config",
        "c.yaml",
    ]
    assert launch_command("torchrun", "c.yaml", gpus=8) == [
        "torchrun",
        "--standalone",
        "--nproc_per_node",
        "8",
        "-m",
        "doit",
        "sft",
        "--config",
        "c.yaml",
    ]
    assert launch_command("deepspeed", "c.yaml", gpus=4) == [
        "deepspeed",
        "--num_gpus",
        "4",
        "--module",
        "doit",
        "sft",
        "--config",
        "c.yaml",
    ]


def test_multi_node_deepspeed_command_runs_without_ssh_on_each_node(tmp_path):
    hostfile = write_hostfile(tmp_path, ["gpu-node-07", "gpu-node-08"], gpus=8)
    assert (tmp_path / "hostfile").read_text() == "gpu-node-07 slots=8\ngpu-node-08 slots=8\n"
    cmd = launch_command(
        "deepspeed",
        "/s/cells/x/sft.yaml",
        gpus=8,
        nodes=2,
        node_rank="1",
        master_addr="gpu-node-07",
        master_port=29500,
        hostfile=hostfile,
    )
    assert cmd == [
        "deepspeed",
        "--no_ssh",
        "--hostfile",
        hostfile,
        "--node_rank",
        "1",
        "--master_addr",
        "gpu-node-07",
        "--master_port",
        "29500",
        "--module",
        "doit",
        "sft",
        "--config",
        "/s/cells/x/sft.yaml",
    ]


def test_multi_node_torchrun_command_uses_a_c10d_rendezvous():
    cmd = launch_command(
        "torchrun",
        "c.yaml",
        gpus=8,
        nodes=2,
        node_rank="1",
        master_addr="gpu-node-01",
        master_port=29400,
    )
    assert cmd == [
        "torchrun",
        "--nnodes",
        "2",
        "--node_rank",
        "1",
        "--rdzv_backend",
        "c10d",
        "--rdzv_endpoint",
        "gpu-node-01:29400",
        "--nproc_per_node",
        "8",
        "-m",
        "doit",
        "sft",
        "--config",
        "c.yaml",
    ]
