"""Staged fine-tuning (doit.train.sft.stages): a staged mix trained stage by stage in this
process, each stage from the one before's final model, the run dir's staged record, a rerun read
back, another mix refused, and --stage's checks."""

from __future__ import annotations

import pytest
import yaml

from doit.train import rundir
from tests.tiny import FIXTURE
from tests.train.conftest import MICRO, run_in_process

pytestmark = pytest.mark.slow  # two short trainings in this process (~15 s)

STAGED = {
    "seed": 1,
    "stages": [
        {"counts": {"math": 2, "ethics": 2}, "num_train_epochs": 1, "learning_rate": 1.0e-3},
        {"counts": {"biology": 2, "history": 2}, "replay": 1, "num_train_epochs": 2},
    ],
}


def staged_args(base, out, mix, **keys) -> list[str]:
    argv = ["--config", str(MICRO), "--model_name_or_path", str(base), "--output_dir", str(out)]
    argv += ["--doit_dir", str(FIXTURE), "--mix", str(mix)]
    return argv + [x for k, v in keys.items() for x in (f"--{k}", str(v))]


@pytest.fixture(scope="module")
def staged_run(base, tmp_path_factory):
    root = tmp_path_factory.mktemp("staged")
    mix = root / "staged.yaml"
    mix.write_text(yaml.safe_dump(STAGED))
    out, cache = root / "run", root / "cache"
    run_in_process(staged_args(base, out, mix), cache)
    return out, mix, cache


def test_each_stage_trains_from_the_one_before_with_its_own_schedule(staged_run, base):
    out, _, _ = staged_run
    first, second = (out / "stages" / k for k in ("1", "2"))
    assert rundir.is_done(first) and rundir.is_done(second)
    one, two = rundir.read_run_info(first), rundir.read_run_info(second)
    assert one["config"]["model"]["model_name_or_path"] == str(base)
    assert two["config"]["model"]["model_name_or_path"] == str(first)
    assert one["config"]["training"]["learning_rate"] == 1.0e-3
    assert two["config"]["training"]["num_train_epochs"] == 2
    assert one["data"]["train_counts"] == {"math": 2, "ethics": 2}
    counts = two["data"]["train_counts"]  # its own four, and one item of stage 1 replayed
    assert counts.get("biology") == counts.get("history") == 2 and sum(counts.values()) == 5
    steps = [r["step"] for r in rundir.read_metrics(second) if r["kind"] == "train"]
    assert steps and min(steps) == 1  # a new trainer: its steps (and optimiser) start afresh


def test_the_staged_run_dir_points_at_its_last_stage(staged_run):
    out, _, _ = staged_run
    done = rundir.read_done(out)
    assert done["stages"] == 2 and done["model_dir"] == "stages/2"
    assert rundir.model_dir(out) == out / "stages" / "2"
    assert (rundir.model_dir(out) / "config.json").is_file()
    last = rundir.read_done(out / "stages" / "2")
    assert done["step"] == last["step"] and done["tokens"] > last["tokens"]
    info = rundir.read_run_info(out)
    assert [s["dir"] for s in info["staged"]] == ["stages/1", "stages/2"]
    assert info["data"]["train_counts"]["math"] + info["data"]["train_counts"]["ethics"] == 5
    assert [r["kind"] for r in rundir.read_metrics(out)] == ["end"]


def test_a_rerun_reads_every_stage_back_and_another_mix_is_refused(staged_run, base):
    out, mix, cache = staged_run
    before = (out / rundir.DONE).read_text()
    proc = run_in_process(staged_args(base, out, mix), cache)
    assert "is finished (DONE)" in proc.stderr and (out / rundir.DONE).read_text() == before
    other = mix.with_name("other.yaml")
    changed = {**STAGED, "stages": [STAGED["stages"][0], {**STAGED["stages"][1], "replay": 2}]}
    other.write_text(yaml.safe_dump(changed))
    proc = run_in_process(staged_args(base, out, other), cache, check=False)
    assert proc.returncode == 2 and "stages/2 holds a finished run of another" in proc.stderr


def test_stage_is_checked_against_the_mix(staged_run, base, tmp_path):
    _, mix, cache = staged_run
    proc = run_in_process(staged_args(base, tmp_path / "r", mix, stage=3), cache, check=False)
    assert (
        proc.returncode == 2 and "error: stage: 3:" in proc.stderr and "has 2 stages" in proc.stderr
    )
    plain = tmp_path / "plain.yaml"
    plain.write_text(yaml.safe_dump({"counts": {"math": 1}}))
    proc = run_in_process(staged_args(base, tmp_path / "r", plain, stage=1), cache, check=False)
    assert proc.returncode == 2 and "has 0 stages" in proc.stderr
