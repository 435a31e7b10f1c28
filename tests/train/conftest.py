"""Session fixtures for the SFT recipe tests: tiny bases, data, and a runner for the real CLI."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from doit.train.rundir import read_metrics
from tests.tiny import FIXTURE, REPO, make_base

RECIPE = REPO / "recipes" / "sft.py"
MICRO = REPO / "recipes" / "configs" / "sft" / "micro" / "full.yaml"
BIN = Path(sys.executable).parent
PY = [sys.executable]


@pytest.fixture(scope="session")
def base(tiny_base) -> Path:
    """The session's tiny Llama base (tests/conftest.py), under the recipe tests' name."""
    return tiny_base


@pytest.fixture(scope="session")
def resformer_base(tmp_path_factory) -> Path:
    """A tiny ResFormer base. doit.models registers its model type with the Auto classes; an
    import that fails fails the tests that use it (the architecture is doit's own, not optional)."""
    import doit.models  # noqa: F401

    return make_base(tmp_path_factory.mktemp("base") / "resformer", arch="resformer")


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("doit_cache")


def env_for(cache: Path) -> dict:
    env = dict(os.environ)
    env.update(
        DOIT_CACHE=str(cache),
        OMP_NUM_THREADS="1",
        TOKENIZERS_PARALLELISM="false",
        PYTHONPATH=str(REPO),
        TORCH_EXTENSIONS_DIR=env.get(
            "TORCH_EXTENSIONS_DIR", str(Path(sys.prefix) / "torch_extensions")
        ),
    )
    env.pop("WORLD_SIZE", None)
    return env


def recipe_args(base: Path, out: Path, **keys) -> list[str]:
    """The micro config, fixture data, and ``keys`` as --key value overrides."""
    keys = {"doit_dir": FIXTURE, "per_ability": 1, **keys}
    argv = ["--config", str(MICRO), "--model_name_or_path", str(base), "--output_dir", str(out)]
    for k, v in keys.items():
        argv += [f"--{k}", *(map(str, v) if isinstance(v, list | tuple) else [str(v)])]
    return argv


def run_recipe(launcher: list[str], argv: list[str], cache: Path, timeout=300, check=True):
    cmd = [*launcher, str(RECIPE), *argv]
    proc = subprocess.run(
        cmd, cwd=REPO, env=env_for(cache), capture_output=True, text=True, timeout=timeout
    )
    return checked(proc) if check else proc


def checked(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    """``proc``, or an AssertionError with its command, exit code and output's tails."""
    if proc.returncode != 0:
        cmd = " ".join(map(str, proc.args))
        raise AssertionError(
            f"{cmd}\nexit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
        )
    return proc


def run_in_process(argv: list[str], cache: Path, check=True) -> subprocess.CompletedProcess:
    """``recipes/sft.py argv`` as this process's call of its ``main`` (what a start decides, and
    training, without the ~10 s of imports a new process pays): its exit code, what it printed
    on stdout, and on stderr (doit's log lines among it); ``check`` as ``run_recipe``'s. The
    environment is ``env_for``'s."""
    from doit.train.sft import main

    out, err = io.StringIO(), io.StringIO()
    sigterm = signal.getsignal(signal.SIGTERM)
    with pytest.MonkeyPatch.context() as env:
        for key, value in env_for(cache).items():
            env.setenv(key, value)
        env.delenv("WORLD_SIZE", raising=False)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(argv)
        finally:
            signal.signal(signal.SIGTERM, sigterm)  # main's handler is a rank's, not pytest's
    proc = subprocess.CompletedProcess(["sft.py", *argv], code, out.getvalue(), err.getvalue())
    return checked(proc) if check else proc


def metrics(out: Path) -> list[dict]:
    return read_metrics(out)


def train_logs(out: Path) -> list[dict]:
    return [r for r in metrics(out) if r["kind"] == "train"]
