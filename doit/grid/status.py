"""``python -m doit.grid status STUDY``: every cell's state, failures with their last error line,
and a bar per kind of cell."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from doit.grid.plan import PLAN, Cell, read_plan
from doit.grid.runner import read_status, state
from doit.io import read_json

STATES = ("done", "running", "failed", "pending")


def study_states(study) -> list[tuple[Cell, str]]:
    return [(c, state(study, c)) for c in read_plan(study).cells]


def bar(done: int, total: int, width: int = 30) -> str:
    filled = round(width * done / total) if total else width
    return "#" * filled + "." * (width - filled)


def print_status(study) -> int:
    rows = study_states(study)
    for kind in ("pretrain", "base", "sft"):
        mine = [s for c, s in rows if c.kind == kind]
        if mine:
            n = Counter(mine)
            print(
                f"{kind:<9} [{bar(n['done'], len(mine))}] {n['done']}/{len(mine)} done"
                + "".join(f", {n[s]} {s}" for s in STATES[1:] if n[s])
            )
    for c, s in rows:
        if s in ("running", "failed"):
            detail = read_status(study, c.id).get("error", "") if s == "failed" else ""
            print(f"  {s:<8} {c.id}  {detail}")
    total = Counter(s for _, s in rows)
    print(", ".join(f"{total[s]} {s}" for s in STATES))
    power = read_json(Path(study) / PLAN).get("power")
    if power:
        from doit.grid.power import describe

        print(f"what the grid can decide (planned):\n{describe(power)}")
    return 0
