"""Deterministic fault injection, for the study runner's crash tests and benchmarks.

``DOIT_FAULT=<point>[:<k>]`` kills this process with SIGKILL the k-th time (default first)
it reaches ``<point>``. Points: ``after_checkpoint`` (fine-tuning, right after a checkpoint is
written), ``mid_eval`` (after a checkpoint's first split is scored), ``mid_results_write``
(a cell's per-item shard written, its results shard not yet). Unset: nothing happens.
"""

from __future__ import annotations

import os
import signal

POINTS = ("after_checkpoint", "mid_eval", "mid_results_write")
_hits: dict[str, int] = {}


def point(name: str) -> None:
    """Die here if ``DOIT_FAULT`` names this point (and this is the k-th time it is reached)."""
    if name not in POINTS:
        raise ValueError(f"unknown fault point {name!r}; expected one of {', '.join(POINTS)}")
    spec = os.environ.get("DOIT_FAULT", "")
    if not spec:
        return
    want, _, k = spec.partition(":")
    if want != name:
        return
    _hits[name] = _hits.get(name, 0) + 1
    if _hits[name] == int(k or 1):
        os.kill(os.getpid(), signal.SIGKILL)
