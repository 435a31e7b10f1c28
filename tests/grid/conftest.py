"""A tiny study: the session's random 2-layer base (``tiny_base``, tests/conftest.py), the
fixture DoIT download, a grid written per test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from doit.testing import tiny_grid, write_grid  # noqa: F401 -- write_grid: for the grid tests
from tests.tiny import FIXTURE, REPO

MICRO = REPO / "recipes" / "configs" / "sft" / "micro" / "full.yaml"


@pytest.fixture(autouse=True)
def doit_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("DOIT_CACHE", str(tmp_path_factory.getbasetemp() / "doit_cache"))


def grid_dict(base: Path, **keys) -> dict:
    """doit.testing's three-cell grid on the fixture download and the micro SFT recipe."""
    return tiny_grid(base, keys.pop("doit_dir", FIXTURE), MICRO, **keys)


def grid_cli(*args: str, env: dict | None = None, check: bool = True, timeout: int = 600):
    """``python -m doit.grid ...`` in a subprocess, one thread, the test's cache."""
    full = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO), **(env or {})}
    proc = subprocess.run(
        [sys.executable, "-m", "doit.grid", *args],
        cwd=REPO,
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"doit.grid {' '.join(args)}: exit {proc.returncode}\n"
            f"{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
        )
    return proc
