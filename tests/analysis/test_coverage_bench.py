"""bench/coverage.py's README table: written between one pair of markers, once per run."""

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("coverage_bench", REPO / "bench" / "coverage.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _tables(text: str, bench) -> int:
    inside = text.split(bench.BEGIN, 1)[1].split(bench.END, 1)[0]
    return sum(line.startswith("| design |") for line in inside.splitlines())


def test_the_readme_holds_the_coverage_table_once():
    bench = _bench()
    assert _tables(bench.README.read_text(encoding="utf-8"), bench) == 1


def test_a_rerun_replaces_the_table_and_refuses_doubled_markers(tmp_path):
    bench = _bench()
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{bench.BEGIN}\nold\n{bench.END}\nafter\n", encoding="utf-8")
    table = "| design | seed_sd |\n|---|---|\n| a | 0 |"
    for _ in range(2):
        bench.write_readme(table, readme)
    text = readme.read_text(encoding="utf-8")
    assert _tables(text, bench) == 1 and "old" not in text
    assert text.startswith("intro\n") and text.endswith("after\n")
    readme.write_text(text + f"{bench.BEGIN}\n{bench.END}\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="expected one"):
        bench.write_readme(table, readme)


def _oracle():
    spec = importlib.util.spec_from_file_location(
        "class_oracle", REPO / "bench" / "class_oracle.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "value, planted", [(4.0, "responsive"), (-3.5, "harmed"), (0.5, "resistant")]
)
def test_the_class_oracle_is_the_package_rule_on_a_calibrated_normal_estimate(value, planted):
    import numpy as np

    from doit.analysis.bootstrap import Z
    from doit.analysis.sensitivity import classify
    from doit.stats.power import Z_EQUIVALENCE

    se, delta = 0.8, 2.0
    est = np.random.default_rng(0).normal(value, se, 20_000)
    called = [
        classify(e - Z * se, e + Z * se, delta, e - Z_EQUIVALENCE * se, e + Z_EQUIVALENCE * se)
        for e in est
    ]
    measured = np.mean(np.array(called) == planted)
    assert _oracle().oracle_rate(value, se, delta, planted) == pytest.approx(measured, abs=0.01)
