"""The run directory's one metrics row schema, its resume rules, and the older layouts it reads."""

import json

import pytest

from doit.train import rundir


def write_lines(path, rows, tail=""):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + tail, encoding="utf-8")


def test_rows_open_with_the_shared_keys_and_refuse_an_unknown_kind():
    row = rundir.metrics_row("train", 3, 0.5, 120, 1.23456, loss=2.0)
    assert list(row)[:5] == list(rundir.SHARED_KEYS) and row["wall_s"] == 1.235
    with pytest.raises(ValueError, match="kind 'eval'"):
        rundir.metrics_row("eval", 3, 0.5, 120, 1.0)


def test_older_fine_tuning_rows_are_read_in_the_shared_schema(tmp_path):
    old = [
        {
            "session": 0,
            "step": 1,
            "epoch": 0.5,
            "loss": 2.0,
            "tokens": 40.0,
            "assistant_tokens": 10.0,
            "assistant_tokens_seen": 10.0,
        },
        {"session": 0, "step": 2, "epoch": 1.0, "eval_math_loss": 1.5},
        {"session": 0, "step": 2, "epoch": 1.0, "train_runtime": 3.0},
    ]
    write_lines(tmp_path / rundir.METRICS, old, tail='{"session": 0, "st')  # a cut last line
    rows = rundir.read_metrics(tmp_path)
    assert [r["kind"] for r in rows] == ["train", "valid", "summary"]
    assert rows[0]["tokens"] == 10.0 and rows[0]["nonpad_tokens"] == 40.0
    assert rows[1]["eval_math_loss"] == 1.5 and rows[1]["wall_s"] == 0.0


def test_older_pretraining_rows_gain_an_epoch_and_the_learning_rate_key(tmp_path):
    old = [{"kind": "train", "step": 10, "tokens": 1024, "wall_s": 2.0, "loss": 3.0, "lr": 1e-3}]
    write_lines(tmp_path / rundir.METRICS, old)
    (row,) = rundir.read_metrics(tmp_path)
    assert row["epoch"] is None and row["learning_rate"] == 1e-3 and "lr" not in row
    assert row["tokens"] == 1024 and row["wall_s"] == 2.0


def test_an_older_fine_tuning_done_gains_its_step(tmp_path):
    assert rundir.read_done(tmp_path) is None
    (tmp_path / rundir.DONE).write_text(json.dumps({"finished": "t", "global_step": 8}))
    assert rundir.read_done(tmp_path)["step"] == 8


def test_a_resumed_session_keeps_rows_up_to_its_checkpoint_and_counts_sessions(tmp_path):
    rows = [rundir.metrics_row("train", s, None, s, 0.0, session=0) for s in (1, 2, 3)]
    write_lines(tmp_path / rundir.METRICS, rows)
    assert rundir.start_metrics(tmp_path, resume_step=2) == 1
    assert [r["step"] for r in rundir.read_metrics(tmp_path)] == [1, 2]
    assert rundir.start_metrics(tmp_path, resume_step=None) == 0
    assert rundir.read_metrics(tmp_path) == []


def test_a_folder_whose_metrics_are_not_utf8_is_no_pretraining_run_and_refused(tmp_path):
    """An existing output_dir holding a metrics.jsonl with a bad byte is someone else's folder:
    the output rule refuses it in one line (not a traceback from the UTF-8 reader)."""
    from doit.io import OutputError

    folder = tmp_path / "theirs"
    folder.mkdir()
    (folder / rundir.METRICS).write_bytes(b'{"kind": "start"}\n\xff\n')
    assert not rundir.is_pretraining_run(folder)
    with pytest.raises(OutputError, match="--output_dir: .* not a doit pretraining run"):
        rundir.check_output_dir(folder, rundir.PRETRAINING_RUN, {})
    assert (folder / rundir.METRICS).read_bytes() == b'{"kind": "start"}\n\xff\n'
