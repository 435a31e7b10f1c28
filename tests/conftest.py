"""Shared fixtures: ``micro_dir``, the micro DoIT corpus (seed 0), built once for the whole run
(the first xdist worker to ask builds it, the other waits), and ``tiny_base``, a random 2-layer
Llama base (``tests.tiny.make_base``), built once per worker.

Under ``pytest -n 2`` (``make test``) each xdist worker runs one torch thread, and its
subprocesses inherit OMP_NUM_THREADS=1, so two workers fill two cores without oversubscribing
them. Tests that start processes of their own (worker pools, two ranks, the demo) carry
``POOLS``: ``--dist loadgroup`` runs them one after another on one worker. Every other test
runs in its module's group (``pytest_collection_modifyitems``), so module fixtures are built once."""

from __future__ import annotations

import os

import pytest

from doit.data.micro import build_micro
from doit.data.micro.build import N_RECORDED
from tests.tiny import make_base

MICRO_SEED = 0
POOLS = pytest.mark.xdist_group("pools")  # tests whose own processes would compete


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups
def pytest_collection_modifyitems(config, items):
    """Under ``--dist loadgroup`` a test without a group joins its module's, so that a module's
    fixtures and caches are built on one worker (spread test by test, every worker that ran
    one of its tests built them again)."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))


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
def _micro_build(tmp_path_factory, worker_id):
    """(folder, summary): built in the run's temp root that the xdist workers share, under a
    lock, by whichever worker asks first (a build is ~16 s of one core); the summary is kept
    beside it as JSON, written last."""
    from filelock import FileLock

    from doit.io import read_json, write_json

    root = tmp_path_factory.getbasetemp()
    root = root if worker_id == "master" else root.parent
    out_dir, summary = root / "micro", root / "micro_summary.json"
    with FileLock(str(root / "micro.lock")):
        if not summary.is_file():
            out_dir.mkdir()
            built = build_micro(out_dir, seed=MICRO_SEED, held_out=N_RECORDED)  # the recorded 100
            write_json(summary, built)
    return out_dir, read_json(summary)


@pytest.fixture(scope="session")
def micro_dir(_micro_build):
    """A built micro corpus (seed 0) in a session tmp dir. Treat it as read-only."""
    return _micro_build[0]


@pytest.fixture(scope="session")
def micro_summary(_micro_build):
    """The summary dict ``build_micro`` returned for ``micro_dir``."""
    return _micro_build[1]
