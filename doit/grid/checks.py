"""What `plan` checks before it writes anything, beyond the grid file's own checks (`spec`).

A grid with scored cells needs a corpus that holds items to score (``doit_dir``: its valid and
test splits). Every fine-tuning cell's resolved recipe config is parsed as the recipe parses
it, without preparing this process (`doit.train.sft.args.check_args`: a wrong type, a key no
dataclass has, any check the recipe makes), and its draw is checked against the pools it draws
from (`doit.train.sft.data.check_draw`: n per ability beyond a pool). So a cell that could only
fail at run time is refused here, by a `GridError` naming the grid file, the grid key the value
came from and the cell.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path

import yaml

from doit.grid.spec import Grid, GridError

SCORED_SPLITS = ("valid", "test")
DRAW_KEYS = ("per_ability", "exclude_abilities", "synthetic", "mix")  # set by the data axes


def check_plan(grid: Grid, cells: list) -> None:
    """Refuse a plan one of whose cells (`doit.grid.plan.Cell`) could not run: its corpus,
    recipe or draw."""
    if grid.pretraining_only:  # its corpus is the pretraining text, read by its own config
        return
    check_corpus(grid)
    check_benchmarks(grid)
    check_formulations(grid, cells)
    check_eval_epochs(grid, cells)
    sizes = pool_sizes(grid.doit_dir)
    with tempfile.TemporaryDirectory(prefix="doit-plan-") as tmp:
        for cell in cells:
            if cell.kind == "sft":
                check_recipe(grid, cell, sizes, Path(tmp))


def check_corpus(grid: Grid) -> None:
    from doit.data.load import load_items
    from doit.data.schema import DataError

    for split in SCORED_SPLITS:
        try:
            load_items(grid.doit_dir, split)
        except DataError as e:
            raise GridError(
                f"{grid.path}: doit_dir: {grid.doit_dir}: every cell is scored on "
                f"its {split} split: {e.problems[0]}"
            ) from None


def check_benchmarks(grid: Grid) -> None:
    """Every benchmark's ``data_dir`` is a folder (else each cell would fail once trained)."""
    for i, b in enumerate(grid.benchmarks):
        if not Path(b.data_dir).is_dir():
            raise GridError(f"{grid.path}: benchmarks[{i}].data_dir: {b.data_dir}: no such folder")


def check_formulations(grid: Grid, cells: list) -> None:
    """Every item the cells train on (their pools) or are scored on (valid, test) can be asked
    in every formulation the grid trains or scores in (an option without a text cannot be
    ranked in the text formulation)."""
    from doit.data import kinds as ak
    from doit.data.load import load_items
    from doit.data.schema import DataError

    wanted = {c.formulation for c in cells if c.kind != "pretrain"} | set(grid.eval_formulations)
    wanted -= {ak.LETTER}  # every item is asked as stored
    pools = {str((c.recipe or {}).get("pool", "1000")) for c in cells if c.kind == "sft"}
    for split in (*SCORED_SPLITS, *sorted(pools)) if wanted else ():
        try:
            items = load_items(grid.doit_dir, split)
        except DataError:
            continue  # a pool that is absent: the draw check says so
        for formulation in sorted(wanted):
            for item in items:
                try:
                    ak.formulate(item, formulation)
                except ValueError as e:
                    raise GridError(f"{grid.path}: formulation: {e}") from None


def check_eval_epochs(grid: Grid, cells: list) -> None:
    """The epochs ``eval_epochs`` lists are within every fine-tuning cell's schedule (those
    whose size is known before drawing: not mixes)."""
    from doit.train.errors import ConfigError
    from doit.train.sft.args import planned_schedule

    if isinstance(grid.eval_epochs, str):
        return
    for cell in cells:
        if cell.kind != "sft" or cell.n_total is None:
            continue
        try:
            schedule = planned_schedule(cell.recipe, cell.n_total, grid.gpus * grid.nodes)
        except ConfigError:
            continue  # the recipe check names it
        epochs = schedule["num_train_epochs"]
        beyond = [e for e in grid.eval_epochs if e > epochs + 1e-9]
        if beyond:
            raise GridError(
                f"{grid.path}: eval_epochs: epoch {beyond[0]} is beyond cell {cell.id}'s "
                f"schedule of {epochs:g} epoch(s)"
            )


def pool_sizes(doit_dir: str):
    """``sizes(pool)``: {ability: items} of a pool of ``doit_dir`` (read once; {} if absent)."""
    from doit.data.load import load_items
    from doit.data.schema import DataError

    read: dict[str, Counter] = {}

    def sizes(pool: str) -> Counter:
        if pool not in read:
            try:
                read[pool] = Counter(it["ability"] for it in load_items(doit_dir, pool))
            except DataError:
                read[pool] = Counter()
        return read[pool]

    return sizes


def check_recipe(grid: Grid, cell, sizes, tmp: Path) -> None:
    """Parse the cell's sft.yaml as the recipe would, then check its draw against the pools."""
    from doit.train.errors import ConfigError
    from doit.train.sft.args import check_args
    from doit.train.sft.data import check_draw

    config = tmp / f"{cell.id}.yaml"
    config.write_text(
        yaml.safe_dump({**cell.recipe, "output_dir": str(tmp / "run")}), encoding="utf-8"
    )
    try:
        check_draw(check_args(["--config", str(config)]).data, sizes)
    except ConfigError as e:
        message = str(e).removeprefix(f"{e.key}: ")
        raise GridError(
            f"{grid.path}: {grid_key(grid, cell, e.key)}: cell {cell.id}: {message}"
        ) from None
    except (ImportError, OSError) as e:  # a library or a file the recipe needs
        raise GridError(f"{grid.path}: sft: cell {cell.id}: {type(e).__name__}: {e}") from None


def grid_key(grid: Grid, cell, key: str) -> str:
    """The grid key a cell's recipe key ``key`` took its value from."""
    if key in DRAW_KEYS:
        axis = {"synthetic": "synthetic", "mix": "mix"}.get(cell.construction)
        return f"data.{axis or ('loo' if cell.excluded_ability else 'per_ability')}"
    if key in grid.sweep:
        return f"sweep.{key}"
    if key in grid.sft.overrides:
        return f"sft.overrides.{key}"
    base = grid.base(cell.base)
    if base.sft_config:
        at = grid.bases.index(base)
        return f"bases[{at}].sft_config: {base.sft_config}: {key}"
    return f"sft.config: {grid.sft.config}: {key}"
