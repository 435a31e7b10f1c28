"""How the recipes start: inputs that cannot work end in one ``error: key: ...`` line and exit 2
before any model is loaded, and a start prints nothing from bitsandbytes.

bitsandbytes logs "Failed to load CPU gemm_4bit_forward from kernels-community" when its CPU ops
are imported on a CPU with AVX512-BF16 and the hub's kernel cannot be used; `doit.train` drops
that record. Whether a start imports bitsandbytes at all depends on the installed peft and
transformers (some import it with the Trainer, others only for QLoRA), so the filter itself is
checked on a bare import of bitsandbytes, with and without `doit.train` before it. So that the
checks hold on any CPU, those processes and the two real starts (one sft, one pretraining) run
through `RUNNER`, which makes bitsandbytes see such a CPU and reports whether its CPU ops were
imported; the other refusals are the recipe's ``main`` called in this process
(`run_in_process`: the same parse and checks, without a process's imports).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.tiny import FIXTURE, REPO
from tests.train.conftest import MICRO, env_for, run_in_process

pytestmark = pytest.mark.slow
HINT = "gemm_4bit_forward"
CPU_OPS = "bitsandbytes.backends.cpu.ops"
RUNNER = f"""
import atexit, importlib.abc, importlib.machinery, runpy, sys

class AVX512BF16(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "bitsandbytes.functional":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            module.has_avx512bf16 = lambda: True

        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, AVX512BF16())
atexit.register(lambda: print("{CPU_OPS} imported:", "{CPU_OPS}" in sys.modules, file=sys.stderr))
recipe = sys.argv.pop(1)
if recipe.startswith("import "):
    exec(recipe)
else:
    runpy.run_path(recipe, run_name="__main__")
"""


def start(recipe: str, argv: list[str], tmp_path) -> subprocess.CompletedProcess:
    """``recipe`` (a file under recipes/, or a line of imports) run by `RUNNER`."""
    target = recipe if recipe.startswith("import ") else str(REPO / "recipes" / recipe)
    cmd = [sys.executable, "-c", RUNNER, target, *argv]
    env = env_for(tmp_path / "cache")
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def sft_argv(model: str, out, **keys) -> list[str]:
    keys = {"doit_dir": FIXTURE, "per_ability": 1, **keys}
    argv = ["--config", str(MICRO), "--model_name_or_path", model, "--output_dir", str(out)]
    return argv + [x for k, v in keys.items() for x in (f"--{k}", str(v))]


def error_line(proc: subprocess.CompletedProcess) -> str:
    """The one ``error:`` line of a refused start (no traceback, no bitsandbytes hint)."""
    assert proc.returncode == 2, proc.stderr[-4000:]
    assert "Traceback" not in proc.stderr and HINT not in proc.stderr, proc.stderr[-4000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr[-4000:]
    return errors[0]


def test_a_missing_model_directory_is_one_error_line(tmp_path):
    out = tmp_path / "run"
    proc = run_in_process(sft_argv("/nonexistent", out), tmp_path / "cache", check=False)
    line = error_line(proc)
    assert line.startswith("error: model_name_or_path: /nonexistent")
    assert "does not exist" in line and "never downloads" in line
    assert not (out / "run_info.json").exists()


@pytest.mark.parametrize(
    "keys, expected",
    [
        ({"per_ability": 5000}, "error: per_ability: n=5000 exceeds the 'biology' pool of 2"),
        ({"synthetic": 999}, "error: synthetic: 999 exceeds"),
    ],
    ids=["per_ability", "synthetic"],
)
def test_a_draw_beyond_the_pool_is_one_error_line_before_the_model_loads(
    keys, expected, base, tmp_path
):
    out = tmp_path / "run"
    argv = sft_argv(str(base), out, **keys)
    hint = "synthetic" not in keys  # the sft start's half of the hint check below: one start
    proc = (
        start("sft.py", argv, tmp_path)
        if hint
        else run_in_process(argv, tmp_path / "cache", check=False)
    )
    assert error_line(proc).startswith(expected)  # and no bitsandbytes hint (error_line)
    assert "embedding rows" not in proc.stderr  # doit.train.sft.model.load_base_model never ran
    assert not (out / "run_info.json").exists()
    if hint:
        assert f"{CPU_OPS} imported:" in proc.stderr, proc.stderr[-4000:]  # RUNNER ran it


def test_a_pretraining_start_prints_no_bitsandbytes_kernel_hint(tmp_path):
    """The pretraining recipe as a process: one error line (the train_file below does not
    exist) and nothing from bitsandbytes, whether or not this start imported it."""
    argv = ["--config", "recipes/configs/pretrain/xs.yaml", "--train_file"]
    argv += [str(tmp_path / "absent.txt"), "--output_dir", str(tmp_path)]
    proc = start("pretrain.py", argv, tmp_path)
    assert f"{CPU_OPS} imported:" in proc.stderr, proc.stderr[-4000:]
    assert error_line(proc).startswith("error: train_file:")


def test_doit_train_drops_the_bitsandbytes_kernel_hint(tmp_path):
    """bitsandbytes imported on such a CPU logs the hint (so this check can fail), and not once
    `doit.train` is imported: the filter every recipe start installs first."""
    pytest.importorskip("bitsandbytes", reason="the hint comes from bitsandbytes, not installed")
    bare = start("import bitsandbytes", [], tmp_path)
    assert f"{CPU_OPS} imported: True" in bare.stderr, bare.stderr[-4000:]
    assert HINT in bare.stderr, bare.stderr[-4000:]
    filtered = start("import doit.train, bitsandbytes", [], tmp_path)
    assert f"{CPU_OPS} imported: True" in filtered.stderr, filtered.stderr[-4000:]
    assert HINT not in filtered.stderr and "Traceback" not in filtered.stderr, filtered.stderr
