"""Running a tiny study end to end: in-process and as subprocesses, through crashes at every
fault point, with a failing cell, and as a submitit array."""

from __future__ import annotations

import signal

import pandas as pd
import pytest

from doit.grid import cli, read_results
from doit.grid.plan import write_plan
from doit.grid.results import TIMING
from doit.grid.runner import run_study
from doit.grid.spec import load_grid
from doit.io import read_jsonl
from tests.conftest import POOLS
from tests.grid.conftest import grid_cli, grid_dict, write_grid

pytestmark = [pytest.mark.slow, POOLS]


def planned(tmp_path, base, name: str, **keys):
    study = tmp_path / name
    write_plan(load_grid(write_grid(tmp_path / f"{name}.yaml", grid_dict(base, **keys))), study)
    return study


def comparable(df: pd.DataFrame) -> pd.DataFrame:
    return df.drop(columns=list(TIMING)).sort_values(
        ["cell", "epoch", "split", "ability"], ignore_index=True
    )


@pytest.fixture(scope="module")
def reference(tmp_path_factory, tiny_base):
    """The uninterrupted in-process run every other run is compared with."""
    tmp = tmp_path_factory.mktemp("reference")
    study = planned(tmp, tiny_base, "study")
    ended = run_study(study)
    return study, ended


def test_in_process_run_writes_every_cells_rows(reference):
    study, ended = reference
    assert sorted(set(ended.values())) == ["done"] and len(ended) == 3
    df = read_results(study)
    assert set(df["construction"]) == {"base", "curated"}
    base = df[df["construction"] == "base"]
    assert set(base["epoch"]) == {0.0} and set(base["n_per_ability"]) == {0}
    loo = df[df["excluded_ability"].notna()]
    assert set(loo["excluded_ability"]) == {"math"}
    assert loo.loc[loo["ability"] == "math", "n_own"].eq(0).all()
    assert set(df.loc[df["construction"] == "curated", "epoch"]) == {1.0, 2.0}  # eval_epochs all
    assert {"valid", "test"} == set(df["split"])
    assert df["score"].between(0, 100).all() and df["n_items"].gt(0).all()
    errors = sum(
        bool(p.get("error"))
        for f in study.glob("cells/*/eval/*/*.pred.jsonl")
        for _, p in read_jsonl(f)
    )
    assert errors > 0 and df["n_no_output"].sum() == errors  # prompts beyond the tiny context
    items = read_results(study, per_item=True)
    per_ability = items.groupby(["cell", "epoch", "split", "ability"])["correct"].mean() * 100
    joined = df.set_index(["cell", "epoch", "split", "ability"])["score"]
    assert (per_ability - joined.loc[per_ability.index]).abs().max() < 1e-9
    assert (study / "results.csv").is_file()


def reference_cells(reference, got: pd.DataFrame) -> pd.DataFrame:
    """The reference run's rows of the cells in ``got``."""
    want = comparable(read_results(reference[0]))
    return want[want["cell"].isin(got["cell"].unique())].reset_index(drop=True)


def test_subprocess_workers_and_launcher_give_the_same_table(tmp_path, tiny_base, reference):
    """Two cells (the base and n = 1), two workers at once, through the python launcher."""
    study = planned(tmp_path, tiny_base, "study", launcher="python", data={"per_ability": [1]})
    grid_cli("run", str(study), "--max-parallel", "2", "--threads", "1")
    got = comparable(read_results(study))
    want = reference_cells(reference, got)
    assert len(got["cell"].unique()) == 2 and list(got["cell"].unique()) == list(
        want["cell"].unique()
    )  # ids ignore the launcher
    pd.testing.assert_frame_equal(
        got.drop(columns=["valid_loss"]), want.drop(columns=["valid_loss"])
    )
    assert (got["valid_loss"] - want["valid_loss"]).abs().max() < 1e-4


@pytest.mark.parametrize("point", ["after_checkpoint", "mid_eval", "mid_results_write"])
def test_a_crash_at_each_fault_point_then_a_rerun_loses_and_repeats_nothing(
    tmp_path, tiny_base, reference, point
):
    study = planned(tmp_path, tiny_base, "study")
    killed = grid_cli("run", str(study), env={"DOIT_FAULT": point}, check=False)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    run_study(study)  # the rerun: in this process (the kill needed one of its own)
    pd.testing.assert_frame_equal(
        comparable(read_results(study)),
        comparable(read_results(reference[0])),
        check_exact=False,
        atol=1e-4,
    )
    items = read_results(study, per_item=True)
    assert items.equals(read_results(reference[0], per_item=True))


def test_a_failing_cell_is_reported_and_the_others_finish(tmp_path, tiny_base, capsys):
    study = planned(tmp_path, tiny_base, "study", data={"per_ability": [1], "synthetic": [1]})
    # a cell that fails at run time (plan refuses a bad recipe, run a sft.yaml edited since):
    # its run folder holds a checkpoint no run_info.json says which run wrote
    (cell,) = study.glob("cells/tiny-syn00001-s0-*")
    (cell / "run" / "checkpoint-2").mkdir(parents=True)
    (cell / "run" / "checkpoint-2" / "trainer_state.json").write_text("{}")
    (cell / "run" / "checkpoint-2" / "optimizer.pt").write_text("")
    assert cli.main(["run", str(study)]) == 1 and "1 failed" in capsys.readouterr().out
    assert cli.main(["status", str(study)]) == 0
    status = capsys.readouterr().out
    assert "failed   tiny-syn00001-s0" in status and "run_info.json" in status
    assert "2 done" in status
    assert len(read_results(study)["cell"].unique()) == 2


def test_submitit_local_executor_runs_a_two_cell_array(tmp_path, tiny_base, reference):
    study = planned(tmp_path, tiny_base, "study", data={"per_ability": [1]})
    grid_cli(
        "run", str(study), "--backend", "submitit-local", "--max-parallel", "2", "--threads", "1"
    )
    got = comparable(read_results(study))
    want = reference_cells(reference, got)
    assert len(got["cell"].unique()) == 2
    pd.testing.assert_frame_equal(got, want, check_exact=False, atol=1e-4)
    assert list((study / "slurm").iterdir())  # submitit's own job folders


def test_workers_take_the_cells_of_built_bases_before_those_waiting_for_pretraining(tmp_path):
    """Two workers, one base to pretrain: the other worker runs the built base's cells
    meanwhile, instead of waiting for the new base with its first cell."""
    from doit.grid.plan import Cell
    from doit.grid.runner import ready_first

    def cell(cid, kind="sft", needs=None):
        return Cell(
            id=cid,
            kind=kind,
            base=cid.split("-")[0],
            arch="vanilla",
            needs=needs,
            path=str(tmp_path / "runs" / cid),
        )

    cells = {
        c.id: c
        for c in [
            cell("pretrain-l", "pretrain"),
            cell("l-n0", needs="pretrain-l"),
            cell("l-n4", needs="pretrain-l"),
            cell("s-n0"),
            cell("s-n4"),
        ]
    }
    order = ready_first(tmp_path / "study", list(cells), cells)
    assert order == ["pretrain-l", "s-n0", "s-n4", "l-n0", "l-n4"]
    # a base pretrained elsewhere (not in this run): its cells keep their place
    assert ready_first(tmp_path / "study", ["l-n0", "s-n0"], cells) == ["l-n0", "s-n0"]
