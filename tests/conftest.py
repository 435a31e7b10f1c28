"""Shared fixtures, built once per session (per xdist worker): ``micro_dir``, the micro DoIT
corpus (seed 0), and ``tiny_base``, a random 2-layer Llama base (``tests.tiny.make_base``).

Under ``pytest -n 2`` (``make test``) each xdist worker runs one torch thread, and its
subprocesses inherit OMP_NUM_THREADS=1, so two workers fill two cores without oversubscribing
them. Tests that start processes of their own (worker pools, two ranks, the demo) carry
``POOLS``: ``--dist loadgroup`` runs them one after another on one worker."""

from __future__ import annotations

import os

import pytest

from doit.data.micro import build_micro
from doit.data.micro.build import N_RECORDED
from tests.tiny import make_base

MICRO_SEED = 0
POOLS = pytest.mark.xdist_group("pools")  # tests whose own processes would compete


def pytest_configure(config):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ["OMP_NUM_THREADS"] = "1"
        import torch

        torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tiny_base(tmp_path_factory):
    """``make_base``'s default base (Llama, width 32), for every test that only reads it."""
    return make_base(tmp_path_factory.mktemp("tiny_base") / "llama")


@pytest.fixture(scope="session")
def _micro_build(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("micro")
    summary = build_micro(out_dir, seed=MICRO_SEED, held_out=N_RECORDED)  # the recorded 100
    return out_dir, summary


@pytest.fixture(scope="session")
def micro_dir(_micro_build):
    """A built micro corpus (seed 0) in a session tmp dir. Treat it as read-only."""
    return _micro_build[0]


@pytest.fixture(scope="session")
def micro_summary(_micro_build):
    """The summary dict ``build_micro`` returned for ``micro_dir``."""
    return _micro_build[1]
