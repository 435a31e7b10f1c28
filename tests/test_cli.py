"""The `doit` front door: every command answers --help, bad ones exit 2, and the README's micro
path (corpus -> tiny pretraining -> sft -> predict -> score) runs through the console script."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from doit.cli import COMMANDS, main

REPO = Path(__file__).resolve().parents[1]
DOIT = Path(sys.executable).parent / "doit"


def test_help_lists_every_command(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(f"  {name} " in out for name in COMMANDS)


def test_no_command_or_an_unknown_one_exits_2(capsys):
    assert main([]) == 2
    assert main(["nope"]) == 2
    assert "unknown command 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_answers_help(command, capsys):
    """In this process: a process start of pretrain or sft costs ~6-10 s of imports (the
    README path below starts each through the console script anyway)."""
    try:
        code = main([command, "--help"])
    except SystemExit as done:
        code = done.code
    assert code == 0 and "usage:" in capsys.readouterr().out


def test_the_module_entry_point_answers_help():
    proc = subprocess.run(
        [sys.executable, "-m", "doit", "data", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "usage:" in proc.stdout


README_SUBCOMMANDS = (
    [["data", name] for name in ("validate", "stats", "split", "curate", "subset", "mix", "micro")]
    + [["eval", name] for name in ("predict", "score", "bench")]
    + [["grid", name] for name in ("plan", "run", "status", "table")]
    + [
        ["analysis", name]
        for name in ("run", "select", "fit", "features", "predict", "plot", "report")
    ]
)


@pytest.mark.parametrize("command", README_SUBCOMMANDS, ids=" ".join)
def test_every_subcommand_in_the_readme_answers_help(command, capsys):
    with pytest.raises(SystemExit) as done:
        main([*command, "--help"])
    assert done.value.code == 0 and "usage:" in capsys.readouterr().out


@pytest.mark.slow
def test_readme_micro_path_through_the_console_script(tmp_path):
    """The README's quick path, shortened in training length (two pretraining steps, one item
    per ability) and in held-out items (40 per split, where the README builds the default)."""
    assert DOIT.is_file(), f"{DOIT} is missing: `pip install -e .` installs the console script"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "DOIT_CACHE": str(tmp_path / "cache")}

    def doit(*args):
        proc = subprocess.run(
            [str(DOIT), *map(str, args)],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert proc.returncode == 0, f"doit {' '.join(map(str, args))}\n{proc.stderr[-4000:]}"
        return proc

    micro, base, sft = tmp_path / "micro", tmp_path / "base", tmp_path / "sft"
    doit("data", "micro", "--out", micro, "--held-out", 40)
    doit(
        "pretrain",
        "--config",
        REPO / "recipes/configs/pretrain/xs.yaml",
        "--micro_dir",
        micro,
        "--output_dir",
        base,
        "--max_steps",
        2,
        "--eval_steps",
        2,
    )
    doit(
        "sft",
        "--config",
        REPO / "recipes/configs/sft/micro/full.yaml",
        "--model_name_or_path",
        base,
        "--doit_dir",
        micro,
        "--per_ability",
        1,
        "--num_train_epochs",
        1,
        "--output_dir",
        sft,
    )
    preds, scores = tmp_path / "pred.jsonl", tmp_path / "scores.json"
    doit(
        "eval",
        "predict",
        "--model",
        sft,
        "--data",
        micro,
        "--split",
        "test",
        "--abilities",
        "biology,math",
        "--max-new-tokens",
        "mc=4,math=16",
        "--out",
        preds,
    )
    doit("eval", "score", preds, "--data", micro, "--split", "test", "--out", scores)
    result = json.loads(scores.read_text())
    assert set(result["abilities"]) == {"biology", "math"}
    assert all(0 <= a["score"] <= 100 for a in result["abilities"].values())
