"""Atomic writes: a run killed mid-write leaves the previous output intact."""

import gzip
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from doit.io import atomic_output_dir, atomic_write_text


def run_until_ready(code: str, ready: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)])
    deadline = time.time() + 60
    while not ready.exists():
        assert proc.poll() is None, "child exited early"
        assert time.time() < deadline, "child never got ready"
        time.sleep(0.05)
    return proc


def kill(proc):
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def test_killed_directory_write_keeps_previous_output(tmp_path):
    out, ready = tmp_path / "cell", tmp_path / "ready"
    out.mkdir()
    (out / "old.jsonl").write_text("previous\n")
    proc = run_until_ready(
        f"""
        import time
        from pathlib import Path
        from doit.io import atomic_output_dir, write_jsonl
        with atomic_output_dir(Path({str(out)!r}), overwrite=True) as tmp:
            write_jsonl(tmp / "new.jsonl", [{{"a": 1}}] * 1000)
            Path({str(ready)!r}).touch()
            time.sleep(60)
    """,
        ready,
    )
    kill(proc)
    assert sorted(p.name for p in out.iterdir()) == ["old.jsonl"]
    assert (out / "old.jsonl").read_text() == "previous\n"
    from doit.io import atomic_output_dir

    assert [p for p in tmp_path.iterdir() if ".tmp-" in p.name]  # what the kill left
    with atomic_output_dir(out, overwrite=True) as tmp:  # the next writer clears it
        (tmp / "new.jsonl").write_text("next\n")
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]


def test_killed_file_write_keeps_previous_file(tmp_path):
    target, ready = tmp_path / "scores.json", tmp_path / "ready"
    target.write_text("old")
    proc = run_until_ready(
        f"""
        import os, time
        from pathlib import Path
        import doit.io as io
        def stall(fd):
            Path({str(ready)!r}).touch()
            time.sleep(60)
        io.os.fsync = stall
        io.atomic_write_text(Path({str(target)!r}), "new" * 100000)
    """,
        ready,
    )
    kill(proc)
    assert target.read_text() == "old"
    leftovers = [p.name for p in tmp_path.iterdir() if p.name not in ("scores.json", "ready")]
    assert all(name.startswith(".scores.json.") for name in leftovers)


def test_exception_inside_leaves_nothing(tmp_path):
    out = tmp_path / "cell"
    with pytest.raises(RuntimeError):
        with atomic_output_dir(out) as tmp:
            (tmp / "x").write_text("half")
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []
    atomic_write_text(tmp_path / "a.txt", "ok")
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_read_jsonl_keeps_unicode_line_separators_that_write_jsonl_writes(tmp_path):
    from doit.io import read_jsonl, write_jsonl

    records = [{"prediction": "A\u2028B"}, {"x": "c\u2029d\u0085e"}, {"y": 1}]
    write_jsonl(tmp_path / "p.jsonl", records)
    assert [r for _, r in read_jsonl(tmp_path / "p.jsonl")] == records
    assert [n for n, _ in read_jsonl(tmp_path / "p.jsonl")] == [1, 2, 3]


def test_read_jsonl_names_the_bad_line_or_yields_or_skips_it(tmp_path):
    from doit.io import JsonError, read_jsonl

    path = tmp_path / "bad.jsonl"
    path.write_text('{"a": 1}\n\n{"a": \n{"a": 3}\n', encoding="utf-8")
    with pytest.raises(JsonError, match=r"bad.jsonl:3: json: invalid JSON"):
        list(read_jsonl(path))
    got = list(read_jsonl(path, on_error="yield"))
    assert [n for n, _ in got] == [1, 3, 4] and isinstance(got[1][1], JsonError)
    assert [r for _, r in read_jsonl(path, on_error="skip")] == [{"a": 1}, {"a": 3}]


def test_predictions_with_unicode_separators_round_trip_through_score(tmp_path):
    from doit.eval.score import read_predictions
    from doit.io import write_jsonl

    preds = [{"type": "biology", "idx": 0, "answer_kind": "mc", "prediction": "A\u2028B"}]
    write_jsonl(tmp_path / "pred.jsonl", preds)
    assert [p for _, p in read_predictions(tmp_path / "pred.jsonl")] == preds


def test_gzip_text_gives_the_same_bytes_for_the_same_text_whatever_the_temp_name(tmp_path):
    from doit.io import atomic_write_gzip_text

    a = atomic_write_gzip_text(tmp_path / "a.csv.gz", "x,y\n1,2\n").read_bytes()
    b = atomic_write_gzip_text(tmp_path / "b" / "a.csv.gz", "x,y\n1,2\n").read_bytes()
    assert a == b and gzip.decompress(a) == b"x,y\n1,2\n"
