"""What a running study is doing, shown while it runs: a bar over the cells, and a bar per
running cell (its optimiser steps, read from the run's own metrics.jsonl; then "scoring").

It reads only the files the cells write (the runner's workers are other processes), every
``every`` seconds, in a thread beside the runner. On a terminal the bars redraw in place; in a
log (no terminal) a line every ``quiet_s`` seconds says the same, so no minute passes silent.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

from tqdm import tqdm

from doit.grid.plan import Cell
from doit.train import rundir


def cell_steps(study, cell: Cell) -> tuple[str, int, int | None]:
    """(phase, step, max_steps) of a cell from its files: pretrain / train / scoring / waiting
    (a staged run training: its newest stage's, the phase ``train stage <k>``)."""
    run = Path(cell.path) if cell.kind == "pretrain" else Path(study) / "cells" / cell.id / "run"
    if cell.kind == "base":
        return "scoring", 0, None
    stage = _training_stage(run)
    if stage is not None:
        phase, step, total = cell_steps_of(rundir.stage_dir(run, stage), "train")
        if phase == "waiting":  # its folder made, nothing logged yet
            return f"train stage {stage}", 0, None
        return f"train stage {stage}", step, step if phase == "scoring" else total
    return cell_steps_of(run, "pretrain" if cell.kind == "pretrain" else "train")


def _training_stage(run: Path) -> int | None:
    """The newest stage of a staged run that is not finished yet (None: no stages, or done)."""
    if rundir.is_done(run) or not (run / rundir.STAGES).is_dir():
        return None
    stages = [int(p.name) for p in (run / rundir.STAGES).iterdir() if p.name.isdecimal()]
    return max(stages) if stages else None


def cell_steps_of(run: Path, phase: str) -> tuple[str, int, int | None]:
    """(phase, step, max_steps) of one run dir from its metrics.jsonl and run_info.json."""
    rows = rundir.read_metrics(run) if (run / rundir.METRICS).is_file() else []
    if not rows:
        return "waiting", 0, None
    if rows[-1].get("kind") == "end":
        return ("scoring" if phase == "train" else "saving"), rows[-1]["step"], None
    total = next((r.get("max_steps") for r in rows if r.get("kind") == "start"), None)
    if total is None and (run / rundir.RUN_INFO).is_file():
        total = rundir.read_run_info(run).get("schedule", {}).get("max_steps")
    return phase, max(int(r.get("step") or 0) for r in rows), total


class StudyProgress:
    """``with StudyProgress(study, cells, running) as p: ... p.ended(cell_id)``: ``running`` is
    a callable giving the ids being worked on now."""

    def __init__(self, study, cells: list[Cell], running, every: float = 2.0, quiet_s=30.0):
        self.study, self.cells = study, {c.id: c for c in cells}
        self.running, self.every, self.quiet_s = running, every, quiet_s
        self.tty = sys.stderr.isatty()
        self.done = 0
        self._stop = threading.Event()
        self._bars: dict[str, tqdm] = {}
        self._total = tqdm(
            total=len(cells),
            desc="cells",
            unit="cell",
            position=0,
            disable=not self.tty,
            dynamic_ncols=True,
        )
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._said = time.monotonic()

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        for bar in self._bars.values():
            bar.close()
        self._total.close()

    def ended(self, cell_id: str, state: str, seconds: float) -> None:
        self.done += 1
        self._total.update(1)
        line = f"{state:<7} {cell_id}  ({seconds:.0f} s; {self.done}/{len(self.cells)} cells)"
        if self.tty:
            self._total.write(line)
        else:
            print(line, flush=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            now = {
                cid: cell_steps(self.study, self.cells[cid])
                for cid in self.running()
                if cid in self.cells
            }
            if self.tty:
                self._draw(now)
            elif time.monotonic() - self._said >= self.quiet_s:
                self._said = time.monotonic()
                print(self.summary(now), flush=True)

    def summary(self, now: dict) -> str:
        parts = [
            f"{cid}: {phase}" + (f" {step}/{total}" if total else "")
            for cid, (phase, step, total) in now.items()
        ]
        return f"[{self.done}/{len(self.cells)} cells done] " + ("; ".join(parts) or "starting")

    def _draw(self, now: dict) -> None:
        for cid in [c for c in self._bars if c not in now]:
            self._bars.pop(cid).close()
        for i, (cid, (phase, step, total)) in enumerate(now.items(), start=1):
            bar = self._bars.get(cid)
            if bar is None:
                bar = self._bars[cid] = tqdm(
                    total=total,
                    desc=cid[:40],
                    unit="step",
                    position=i,
                    leave=False,
                    dynamic_ncols=True,
                )
            if total and bar.total != total:
                bar.total = total
            bar.set_postfix_str(phase, refresh=False)
            bar.n = step
            bar.refresh()
