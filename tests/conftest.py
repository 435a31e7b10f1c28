"""Shared fixtures. ``micro_dir``: the micro DoIT corpus (seed 0), built once per session."""

from __future__ import annotations

import pytest

from doit.data.micro import build_micro

MICRO_SEED = 0


@pytest.fixture(scope="session")
def _micro_build(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("micro")
    summary = build_micro(out_dir, seed=MICRO_SEED)
    return out_dir, summary


@pytest.fixture(scope="session")
def micro_dir(_micro_build):
    """A built micro corpus (seed 0) in a session tmp dir. Treat it as read-only."""
    return _micro_build[0]


@pytest.fixture(scope="session")
def micro_summary(_micro_build):
    """The summary dict ``build_micro`` returned for ``micro_dir``."""
    return _micro_build[1]
