"""The commands a cell's training is launched with, multi-node included, asserted exactly."""

from __future__ import annotations

import sys

from doit.grid.cell import launch_command


def test_single_node_commands():
    assert launch_command("python", "c.yaml") == [sys.executable, "-m", "doit", "sft",
                                                   "--config", "c.yaml"]  # fmt: skip
    assert launch_command("torchrun", "c.yaml", gpus=8) == [
        "torchrun", "--standalone", "--nproc_per_node", "8",
        "-m", "doit", "sft", "--config", "c.yaml"]  # fmt: skip
    assert launch_command("deepspeed", "c.yaml", gpus=4) == [
        "deepspeed", "--num_gpus", "4", "--module", "doit", "sft", "--config", "c.yaml"]  # fmt: skip


def test_multi_node_deepspeed_command_runs_without_ssh_on_each_node():
    cmd = launch_command("deepspeed", "/s/cells/x/sft.yaml", gpus=8, nodes=4, node_rank="2",
                         master_addr="gpu-node-07", master_port=29500)  # fmt: skip
    assert cmd == ["deepspeed", "--no_ssh", "--num_nodes", "4", "--node_rank", "2",
                   "--master_addr", "gpu-node-07", "--master_port", "29500",
                   "--num_gpus", "8", "--module", "doit", "sft",
                   "--config", "/s/cells/x/sft.yaml"]  # fmt: skip


def test_multi_node_torchrun_command_uses_a_c10d_rendezvous():
    cmd = launch_command("torchrun", "c.yaml", gpus=8, nodes=2, node_rank="1",
                         master_addr="gpu-node-01", master_port=29400)  # fmt: skip
    assert cmd == ["torchrun", "--nnodes", "2", "--node_rank", "1", "--rdzv_backend", "c10d",
                   "--rdzv_endpoint", "gpu-node-01:29400", "--nproc_per_node", "8",
                   "-m", "doit", "sft", "--config", "c.yaml"]  # fmt: skip
