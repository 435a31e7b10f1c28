"""Running a planned study: which cells are pending, and the backends that run them.

Backends:
- ``local``, ``--max-parallel 1``: every cell in this process, one after another (micro cells
  through the library calls; ``launcher: python|torchrun|deepspeed`` cells train in a
  subprocess and are scored here).
- ``local``, ``--max-parallel K``: K worker processes at once, each with ``--threads T`` CPU
  threads and, where there are GPUs, its own ``gpus`` of them. A worker is forked from a
  server that imported torch, transformers and doit's training and scoring once
  (``run_worker``); ``python -m doit.grid run-cell``, a new interpreter a cell, where the
  platform has no forkserver or with ``DOIT_WORKER_START=exec`` (``bench/grid.py`` compares).
- ``slurm``: a submitit job array (K = array concurrency) of the same worker function;
  ``submitit-local`` runs that array through submitit's local executor (try a Slurm study here).

Pretraining cells run first (their own wave), then the rest. A failing cell (any exception,
``SystemExit`` included) is recorded in its ``status.json`` and never stops the others;
``--retry-failed`` runs failed cells again, otherwise they are left as they are, also by a
runner that listed the cell before it failed (the state is read again under the lock).

A cell is locked while a worker runs it: an exclusive POSIX record lock (``fcntl.lockf``) on
``cells/<id>/lock``, held by that worker alone, so two runners never work on one cell. Whether
a cell is locked is asked without taking the lock (``F_GETLK``), so `status` or another
runner's look never makes a starting worker find its cell busy. The lock goes with its
process (a killed worker's cell is pending again), and it works across the hosts of a shared
filesystem that supports POSIX locks (NFS does).
"""

from __future__ import annotations

import errno
import fcntl
import fnmatch
import os
import struct
import subprocess
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from doit.grid import pretraining, results
from doit.grid.cell import cell_dir, is_done, launch_keys, run_cell, set_threads, thread_env
from doit.grid.plan import Cell, read_plan
from doit.grid.progress import StudyProgress
from doit.io import read_json, write_json

STATUS = "status.json"
BACKENDS = ("local", "slurm", "submitit-local")
LOCK = "lock"
# struct flock, as F_GETLK reads and writes it: its fields' order and its l_type's place
_FLOCK, _TYPE = ("qqihh", 3) if sys.platform == "darwin" else ("hhqqi4x", 0)
_held: set[str] = set()  # lock files this process holds (a process never conflicts with itself)


class Busy(RuntimeError):
    """Another process holds the cell's lock."""


@contextmanager
def cell_lock(study, cell_id: str):
    """Hold the cell's lock for the body, or raise Busy at once."""
    path = cell_dir(study, cell_id) / LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        try:
            fcntl.lockf(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno not in (errno.EACCES, errno.EAGAIN):
                raise
            raise Busy(cell_id) from None
        _held.add(os.path.realpath(path))
        try:
            yield
        finally:
            _held.discard(os.path.realpath(path))
            fcntl.lockf(fh, fcntl.LOCK_UN)


def is_locked(study, cell_id: str) -> bool:
    """Whether a worker holds the cell's lock, asked without taking it (F_GETLK). A POSIX
    lock is released when its process closes any handle of the file, so a lock this process
    holds is answered from memory, not by opening the file."""
    path = cell_dir(study, cell_id) / LOCK
    if os.path.realpath(path) in _held:
        return True
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        return False
    query = [0, 0, 0, 0, 0]  # the whole file (start 0, length 0 = to its end, from SEEK_SET 0)
    query[_TYPE] = fcntl.F_WRLCK  # could a worker take it now?
    with fh:
        answer = struct.unpack(_FLOCK, fcntl.fcntl(fh, fcntl.F_GETLK, struct.pack(_FLOCK, *query)))
    return answer[_TYPE] != fcntl.F_UNLCK


def read_status(study, cell_id: str) -> dict:
    path = cell_dir(study, cell_id) / STATUS
    return read_json(path) if path.is_file() else {}


def state(study, cell: Cell) -> str:
    """pending | running | done | failed."""
    if is_done(study, cell):
        return "done"
    if is_locked(study, cell.id):
        return "running"
    return "failed" if read_status(study, cell.id).get("state") == "failed" else "pending"


def work_cell(
    study,
    cell_id: str,
    threads: int | None = None,
    launch: dict | None = None,
    retry_failed: bool = False,
) -> str:
    """Run one cell under its lock, recording how it ended; returns its final state. A cell
    found failed under the lock stays failed unless ``retry_failed`` (a runner may have listed
    it before another failed it). A failure, ``SystemExit`` included (a recipe's parser, a
    launcher), is recorded, never raised: one cell never stops the others."""
    set_threads(threads)
    status = cell_dir(study, cell_id) / STATUS
    try:
        with cell_lock(study, cell_id):
            if not retry_failed and read_status(study, cell_id).get("state") == "failed":
                return "failed"
            write_json(
                status,
                {
                    "state": "running",
                    "pid": os.getpid(),
                    "host": os.uname().nodename,
                    "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
                },
            )
            try:
                run_cell(study, cell_id, launch)
            except (Exception, SystemExit) as e:  # noqa: BLE001 - recorded, the run goes on
                error = f"{type(e).__name__}: {e}".strip().splitlines()[-1]
                write_json(
                    status, {"state": "failed", "error": error, "traceback": traceback.format_exc()}
                )
                return "failed"
            write_json(status, {"state": "done"})
            return "done"
    except Busy:
        return "running"


def todo(study, pattern: str | None = None, retry_failed: bool = False) -> list[list[Cell]]:
    """Waves of cells to run: pretraining first, then the rest (done and running cells left out),
    each wave longest first by the plan's estimate (so the last cell to start is a short one,
    and parallel workers end together); ``pattern`` selects cells by id; the pretraining cells
    the selected ones need come along."""
    every = read_plan(study).cells
    chosen = {c.id for c in every if not pattern or fnmatch.fnmatch(c.id, pattern)}
    chosen |= {c.needs for c in every if c.id in chosen and c.needs}
    cells = [c for c in every if c.id in chosen]
    states = {c.id: state(study, c) for c in cells}
    wanted = {"pending", "failed"} if retry_failed else {"pending"}
    ready = sorted(
        (c for c in cells if states[c.id] in wanted), key=lambda c: -(c.est_s or 0.0)
    )  # stable: plan order among equal estimates
    return [
        w
        for w in (
            [c for c in ready if c.kind == "pretrain"],
            [c for c in ready if c.kind != "pretrain"],
        )
        if w
    ]


def run_study(
    study,
    backend: str = "local",
    max_parallel: int = 1,
    threads: int | None = None,
    pattern: str | None = None,
    retry_failed: bool = False,
    slurm: dict | None = None,
) -> dict[str, str]:
    """Run every pending cell; returns {cell id: final state}; then writes the tables
    (results.csv with scored cells, pretraining.csv with pretraining cells).
    ``threads`` defaults to the CPU cores shared out among the ``max_parallel`` local workers
    (two workers left at torch's default on 2 cores oversubscribe them)."""
    from doit.grid.plan import check_unchanged

    check_unchanged(study)
    if threads is None and backend == "local" and max_parallel > 1:
        threads = max(1, (os.cpu_count() or 1) // max_parallel)
    waves = todo(study, pattern, retry_failed)
    ended: dict[str, str] = {}
    # Local workers take one queue, pretraining first (a cell waits for its own base only);
    # in-process and submitit runs go wave by wave.
    if backend == "local" and max_parallel > 1:
        ids = [c.id for w in waves for c in w]
        ended = run_workers(study, ids, max_parallel, threads, retry_failed)
    else:
        for wave in waves:
            ids = [c.id for c in wave]
            ended |= (
                run_here(study, ids, threads, retry_failed)
                if backend == "local"
                else run_submitit(
                    study, ids, max_parallel, threads, backend, slurm or {}, retry_failed
                )
            )
    write_tables(study)
    return ended


def write_tables(study) -> list[Path]:
    """The tables the study's cells fill: results.csv, pretraining.csv."""
    kinds = {c.kind for c in read_plan(study).cells}
    out = [results.write_csv(study)] if kinds - {"pretrain"} else []
    return out + ([pretraining.write_csv(study)] if "pretrain" in kinds else [])


# --- local worker processes ----------------------------------------------------------------------
def gpu_slots(max_parallel: int, gpus_per_cell: int) -> list[str | None]:
    """CUDA_VISIBLE_DEVICES of each worker slot (None without GPUs)."""
    try:
        import torch

        count = torch.cuda.device_count()
    except ImportError:
        count = 0
    if not count:
        return [None] * max_parallel
    slots = count // gpus_per_cell
    if slots < 1:
        raise RuntimeError(f"a cell wants {gpus_per_cell} GPUs; this machine has {count}")
    return [
        ",".join(str(s * gpus_per_cell + g) for g in range(gpus_per_cell))
        for s in range(min(max_parallel, slots))
    ]


def run_workers(
    study, ids: list[str], max_parallel: int, threads: int | None, retry_failed: bool = False
) -> dict:
    """Each cell in a worker process; K at once; each slot keeps its own GPUs."""
    plan = read_plan(study)
    cells = {c.id: c for c in plan.cells}
    slots = gpu_slots(max_parallel, plan.grid.gpus)
    free, busy = list(range(len(slots))), set()

    def one(cid: str) -> tuple[str, str]:
        started = time.perf_counter()
        if not wait_for_base(study, cells[cid], cells, set(ids)):
            progress.ended(cid, "failed", time.perf_counter() - started)
            return cid, "failed"
        slot = free.pop()
        env = {**os.environ, **thread_env(threads)}
        if slots[slot] is not None:
            env["CUDA_VISIBLE_DEVICES"] = slots[slot]
        started, log = time.perf_counter(), cell_dir(study, cid) / "worker.log"
        busy.add(cid)
        try:
            run_worker(study, cid, threads, retry_failed, log, env)
        finally:
            busy.discard(cid)
            free.append(slot)
        ended = state(study, cells[cid])
        progress.ended(cid, ended, time.perf_counter() - started)
        return cid, ended

    ids = ready_first(study, ids, cells)
    with StudyProgress(study, [cells[c] for c in ids], lambda: sorted(busy)) as progress:
        with ThreadPoolExecutor(len(slots)) as pool:
            return dict(pool.map(one, ids))


def ready_first(study, ids: list[str], cells: dict) -> list[str]:
    """``ids`` with the cells whose base this run still pretrains moved after the others (in
    order otherwise): a worker that takes such a cell waits for the base, and while one base
    pretrains the other workers run the cells of bases that exist."""
    queued = set(ids)

    def waits(cid: str) -> bool:
        needs = cells[cid].needs
        return bool(needs) and needs in queued and state(study, cells[needs]) != "done"

    return sorted(ids, key=waits)


# What a worker imports before its cell: forked from a server that imported them once, a
# worker starts in a fraction of a second instead of paying torch's and transformers' imports
# (seconds a cell, most of a micro cell's time besides its training and scoring).
WORKER_PRELOAD = ["doit.grid.cell", "doit.train.sft.trainer", "doit.eval.predict"]
_server = None  # the fork-server context, started by the first worker
WORKER_START = "DOIT_WORKER_START"  # env: forkserver (default) | exec (a new interpreter a cell)


def run_worker(study, cid: str, threads, retry_failed: bool, log: Path, env: dict) -> None:
    """One cell in a worker process, its output appended to ``log``: forked from a server
    that imported ``WORKER_PRELOAD`` (multiprocessing's forkserver) where the platform has
    one, else ``python -m doit.grid run-cell`` in a new interpreter."""
    global _server
    import multiprocessing as mp

    start = os.environ.get(WORKER_START, "forkserver")
    if start not in ("forkserver", "exec"):
        raise ValueError(f"{WORKER_START}={start!r}: expected forkserver or exec")
    if start == "exec" or "forkserver" not in mp.get_all_start_methods():
        cmd = [sys.executable, "-m", "doit.grid", "run-cell", str(study), cid]
        cmd += ["--threads", str(threads)] if threads else []
        cmd += ["--retry-failed"] if retry_failed else []
        with log.open("a", encoding="utf-8") as fh:
            subprocess.run(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT, check=False)
        return
    if _server is None:
        _server = mp.get_context("forkserver")
        _server.set_forkserver_preload(WORKER_PRELOAD)
    worker = _server.Process(
        target=_worker_main, args=(str(study), cid, threads, retry_failed, str(log), env)
    )
    worker.start()
    worker.join()


def _worker_main(study: str, cid: str, threads, retry_failed: bool, log: str, env: dict):
    """A forked worker: the runner's environment for it, its output to ``log``, the cell."""
    os.environ.clear()
    os.environ.update(env)
    sys.stdout.flush(), sys.stderr.flush()
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(fd, 1), os.dup2(fd, 2)
    os.close(fd)
    try:
        ended = work_cell(study, cid, threads, retry_failed=retry_failed)
    finally:
        sys.stdout.flush(), sys.stderr.flush()
    sys.exit(exit_status(ended))


def exit_status(ended: str) -> int:
    """A worker's exit status for its cell's final state: 0 done (or run by another), else 1."""
    return 0 if ended in ("done", "running") else 1


def run_here(study, ids: list[str], threads: int | None, retry_failed: bool) -> dict:
    """Each cell in this process, one after another, with the same progress display."""
    cells = {c.id: c for c in read_plan(study).cells}
    current: list[str] = []
    out = {}
    with StudyProgress(study, [cells[c] for c in ids], lambda: list(current)) as progress:
        for cid in ids:
            started = time.perf_counter()
            current[:] = [cid]
            out[cid] = work_cell(study, cid, threads, retry_failed=retry_failed)
            current.clear()
            progress.ended(cid, out[cid], time.perf_counter() - started)
    return out


def wait_for_base(study, cell: Cell, cells: dict, queued: set[str], poll_s: float = 2.0) -> bool:
    """Wait while the pretraining cell that ``cell`` needs is queued ahead of it or running;
    False, with ``cell`` marked failed, once that cell has failed or will not run."""
    needs = cell.needs
    while needs:
        st = state(study, cells[needs])
        if st == "done":
            return True
        if st == "failed" or (st == "pending" and needs not in queued):
            why = "failed" if st == "failed" else "is not among the cells run"
            write_json(
                cell_dir(study, cell.id) / STATUS,
                {"state": "failed", "error": f"its base is not pretrained ({needs} {why})"},
            )
            return False
        time.sleep(poll_s)
    return True


# --- Slurm through submitit ----------------------------------------------------------------------
def slurm_task(study: str, cell_id: str, threads: int | None, retry_failed: bool = False) -> str:
    """One array task: single-node cells run as locally; a multi-node cell's task on every node
    launches its rank group (node rank and master from the Slurm environment); node 0 scores."""
    import submitit

    plan = read_plan(study)
    cell = plan.cell(cell_id)
    if plan.grid.nodes == 1 or cell.kind == "pretrain":
        return work_cell(study, cell_id, threads, retry_failed=retry_failed)
    from doit.grid.cell import write_hostfile

    env = submitit.JobEnvironment()
    hostfile = write_hostfile(cell_dir(study, cell_id), env.hostnames, plan.grid.gpus)
    launch = {"node_rank": str(env.node), "master_addr": env.hostnames[0], "hostfile": hostfile}
    if env.node != 0:
        from doit.grid.cell import train

        train(cell, cell_dir(study, cell_id), {**launch_keys(plan.grid), **launch})
        return "worker"
    return work_cell(study, cell_id, threads, launch, retry_failed)


def run_submitit(
    study,
    ids: list[str],
    max_parallel: int,
    threads: int | None,
    backend: str,
    slurm: dict,
    retry_failed: bool = False,
) -> dict:
    import submitit

    grid = read_plan(study).grid
    folder = Path(study) / "slurm" / "%j"
    if backend == "submitit-local":
        executor = submitit.AutoExecutor(folder=folder, cluster="local")
    else:
        executor = submitit.AutoExecutor(folder=folder)
    params = {"timeout_min": 24 * 60, **grid.slurm, **slurm}
    executor.update_parameters(
        slurm_array_parallelism=max_parallel, nodes=grid.nodes, tasks_per_node=1, **params
    )
    jobs = executor.map_array(
        slurm_task, [str(study)] * len(ids), ids, [threads] * len(ids), [retry_failed] * len(ids)
    )
    out = {}
    for cid, job in zip(ids, jobs):
        try:
            result = job.result()
            out[cid] = result[0] if isinstance(result, list) else result
        except Exception as e:  # noqa: BLE001 - a job that died before recording its state
            out[cid] = "failed"
            write_json(cell_dir(study, cid) / STATUS, {"state": "failed", "error": str(e)})
    return out
