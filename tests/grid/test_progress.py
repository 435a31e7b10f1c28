"""The running study's progress: each cell's phase and steps read from its own files, and a
line at least every quiet interval when the output is not a terminal."""

from __future__ import annotations

import time

from doit.grid.plan import Cell
from doit.grid.progress import StudyProgress, cell_steps
from doit.io import write_json
from doit.train import rundir


def sft_cell(study, cid="a-n0004-s0-x", rows=(), max_steps=None) -> Cell:
    run = study / "cells" / cid / "run"
    run.mkdir(parents=True)
    for row in rows:
        rundir.append_metrics(run, rundir.metrics_row(row[0], row[1], 0.0, 0, 0.0))
    if max_steps:
        write_json(run / rundir.RUN_INFO, {"schedule": {"max_steps": max_steps}})
    return Cell(id=cid, kind="sft", base="a", arch="llama")


def test_a_cells_phase_and_steps_come_from_its_files(tmp_path):
    assert cell_steps(tmp_path, sft_cell(tmp_path, "w")) == ("waiting", 0, None)
    training = sft_cell(tmp_path, "t", [("train", 3), ("train", 7)], max_steps=40)
    assert cell_steps(tmp_path, training) == ("train", 7, 40)
    scoring = sft_cell(tmp_path, "s", [("train", 40), ("end", 40)], max_steps=40)
    assert cell_steps(tmp_path, scoring)[0] == "scoring"


def test_a_staged_cell_shows_its_newest_stages_steps(tmp_path):
    cell = sft_cell(tmp_path, "m")
    run = tmp_path / "cells" / "m" / "run"
    for k, rows in ((1, [("train", 10), ("end", 10)]), (2, [("train", 4)])):
        stage = rundir.stage_dir(run, k)
        stage.mkdir(parents=True)
        for kind, step in rows:
            rundir.append_metrics(stage, rundir.metrics_row(kind, step, 0.0, 0, 0.0))
    write_json(rundir.stage_dir(run, 2) / rundir.RUN_INFO, {"schedule": {"max_steps": 30}})
    assert cell_steps(tmp_path, cell) == ("train stage 2", 4, 30)
    (run / rundir.DONE).write_text("{}")
    assert cell_steps(tmp_path, cell)[0] == "waiting"  # done: the top folder's own rows


def test_without_a_terminal_a_line_comes_at_least_every_quiet_interval(tmp_path, capsys):
    cell = sft_cell(tmp_path, rows=[("train", 5)], max_steps=20)
    with StudyProgress(tmp_path, [cell], lambda: [cell.id], every=0.05, quiet_s=0.1) as p:
        time.sleep(0.5)
        p.ended(cell.id, "done", 1.0)
    out = capsys.readouterr().out
    assert f"[0/1 cells done] {cell.id}: train 5/20" in out
    assert f"done    {cell.id}" in out and "1/1 cells" in out
