"""Launchers: which one started us, what the process needs before `SFTConfig` exists, and checks.

Supported: ``deepspeed recipes/sft.py`` (any ``--num_gpus``/``--num_nodes``), ``torchrun``,
and plain ``python``. Two launches are silently wrong without a check, so `check_world_size`
stops them: torchrun DDP on CPU without ``use_cpu`` trains one full copy per rank, and
``accelerate launch --cpu --num_processes 2`` starts one process that skips DeepSpeed.

DeepSpeed on CPU: transformers only gives DeepSpeed a process group backend on GPUs, so
`prepare` builds accelerate's `PartialState` itself with gloo (the recipe then passes
``accelerator_config: {use_configured_state: true}``). Under plain ``python`` a DeepSpeed run
gets single-process distributed defaults (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
MASTER_PORT); without them DeepSpeed looks for MPI (mpi4py). DeepSpeed's CPU all-reduce leaves
one shared-memory buffer per rank in /dev/shm; `cleanup_shm` removes this process's.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from doit.train.errors import ConfigError

SHM_DIR = Path("/dev/shm")
SHM_PREFIX = "deepspeed_allreduce_buffer"


class LaunchError(ConfigError):
    """A launch that would train wrongly (world size, a launcher that drops DeepSpeed)."""

    def __init__(self, message: str):
        super().__init__("launch", message)


@dataclass
class LaunchKeys:
    """The training keys a recipe's first parsing pass reads (same names as in
    `TrainingArguments`): they decide the process environment before the second pass builds the
    real argument dataclasses."""

    deepspeed: str | None = None
    accelerator_config: str | None = None
    per_device_train_batch_size: int = 8
    gradient_accumulation_steps: int = 1
    dataset_kwargs: str | None = None
    output_dir: str | None = None
    save_strategy: str | None = None  # read to tell whether the user set it (sft's default)


def cpu_overrides(info: dict, keys: LaunchKeys) -> list[str]:
    """Flags the second parsing pass appends for the launch ``describe`` found: without an
    accelerator, ``use_cpu`` or, under DeepSpeed, the gloo state `prepare` built
    (``use_configured_state``)."""
    if info["accelerator"]:
        return []
    if not keys.deepspeed:
        return ["--use_cpu", "true"]
    accel = _as_mapping("accelerator_config", keys.accelerator_config)
    return ["--accelerator_config", json.dumps({**accel, "use_configured_state": True})]


def _as_mapping(key: str, value) -> dict:
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        raise ConfigError(key, f"expected a mapping or a JSON object, got {value!r}") from None


@contextlib.contextmanager
def scoped_environment() -> Iterator[None]:
    """Run a body that may set environment variables (accelerate, DeepSpeed do) and put
    ``os.environ`` back as it was afterwards, so one process can make many runs."""
    saved = dict(os.environ)
    try:
        yield
    finally:
        for key in set(os.environ) - set(saved):
            del os.environ[key]
        os.environ.update(saved)


def forget_previous_accelerator() -> None:
    """One process may train several runs (the ladder, the study runner, the tests). accelerate
    refuses a second Accelerator with a DeepSpeed plugin and would carry gradient-accumulation
    state over, so drop the previous run's; the process group (`PartialState`, prepared by
    `prepare`) stays."""
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(reset_partial_state=False)
    GradientState._reset_state()


def launcher() -> str:
    env = os.environ
    if "CROSS_RANK" in env and "LOCAL_SIZE" in env:
        return "deepspeed"
    if "TORCHELASTIC_RUN_ID" in env:
        return "torchrun"
    if any(k.startswith("ACCELERATE_") and k != "ACCELERATE_USE_DEEPSPEED" for k in env):
        return "accelerate"
    return "python"


def has_accelerator() -> bool:
    import torch

    return torch.accelerator.is_available()


def launcher_world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def single_process_env() -> dict[str, str]:
    """Distributed defaults for one process; only keys the launcher did not set."""
    defaults = {
        "RANK": "0",
        "WORLD_SIZE": "1",
        "LOCAL_RANK": "0",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
    }
    added = {k: v for k, v in defaults.items() if k not in os.environ}
    os.environ.update(added)
    return added


def describe(deepspeed_config: str | None) -> dict:
    """The launch as found (no side effects); raises LaunchError for one that drops DeepSpeed."""
    found = launcher()
    if deepspeed_config and found == "accelerate":
        if os.environ.get("ACCELERATE_USE_DEEPSPEED", "").lower() != "true":
            raise LaunchError(
                "`accelerate launch` without its DeepSpeed plugin starts the recipe without "
                "DeepSpeed (with --cpu: one process whatever --num_processes says). Launch with "
                "`deepspeed recipes/sft.py ...` (see recipes/README.md)."
            )
    return {
        "launcher": found,
        "accelerator": has_accelerator(),
        "deepspeed": bool(deepspeed_config),
        "world_size": launcher_world_size(),
        "env_added": {},
    }


def prepare(info: dict, timeout_s: int = 1800) -> None:
    """Set the process up for the launch ``describe`` found; records what it changed in ``info``."""
    if info["deepspeed"] and "RANK" not in os.environ:
        info["env_added"] = single_process_env()
    if info["deepspeed"] and not info["accelerator"]:
        _deepspeed_state_on_cpu(timeout_s)


def _deepspeed_state_on_cpu(timeout_s: int) -> None:
    from accelerate import PartialState
    from accelerate.state import AcceleratorState
    from accelerate.utils import DistributedType

    os.environ["ACCELERATE_USE_DEEPSPEED"] = "true"
    if PartialState._shared_state.get("distributed_type") == DistributedType.DEEPSPEED:
        return
    AcceleratorState._reset_state(reset_partial_state=True)  # as TrainingArguments does
    PartialState(backend="gloo", timeout=timedelta(seconds=timeout_s))


def check_world_size(training_args, deepspeed: bool) -> None:
    """Stop when the trainer's idea of the job differs from what the launcher started."""
    from accelerate.utils import DistributedType

    started, sees = launcher_world_size(), training_args.world_size
    if started != sees:
        raise LaunchError(
            f"the launcher started {started} processes (WORLD_SIZE) but the trainer sees a world "
            f"size of {sees}: each rank would train its own full copy. Launch with "
            "`deepspeed`, `torchrun` or plain `python` (see recipes/README.md)."
        )
    kind = training_args.distributed_state.distributed_type
    if deepspeed and kind != DistributedType.DEEPSPEED:
        raise LaunchError(
            f"a DeepSpeed config was given but the trainer runs {kind.value}, not DeepSpeed "
            "(e.g. `accelerate launch --cpu` drops it). Launch with `deepspeed recipes/sft.py` "
            "or plain `python recipes/sft.py`."
        )


def exit_on_sigterm() -> None:
    """Turn SIGTERM (launchers stop the other ranks with it) into SystemExit, so clean-up runs."""

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)


def shm_buffer() -> Path | None:
    """This rank's DeepSpeed CPU all-reduce buffer (named by uid, master addr/port and rank)."""
    env = os.environ
    if "MASTER_ADDR" not in env or "MASTER_PORT" not in env or "RANK" not in env:
        return None
    name = f"{SHM_PREFIX}_{os.getuid()}_{env['MASTER_ADDR']}_{env['MASTER_PORT']}_{env['RANK']}"
    return SHM_DIR / name


def cleanup_shm() -> Path | None:
    path = shm_buffer()
    if path is not None and path.exists():
        path.unlink(missing_ok=True)
        return path
    return None


def exit_process(code: int) -> None:
    """End the process with ``code``. Under a multi-rank launcher, skip the interpreter's
    teardown (``os._exit`` after flushing logs and streams): after training, gloo/DeepSpeed
    background threads can abort a rank in C++ static destructors ("terminate called without
    an active exception", exit -6) although every result is already written."""
    import logging
    import sys

    if launcher_world_size() <= 1:
        sys.exit(code)
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
