"""studies/seed_noise_micro/compare.py's correlation of seed effects across abilities: it tells a
shared seed effect from independent ones on planted runs."""

import importlib.util
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]


def _compare():
    path = REPO / "studies" / "seed_noise_micro" / "compare.py"
    spec = importlib.util.spec_from_file_location("seed_noise_compare", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _arm(rng, shared: float, abilities=10, ns=(16, 64, 256), seeds=4, items=2000) -> dict:
    """{(ability, n): (seeds x items) 0/1} with a seed effect per run (shared by its abilities
    with weight ``shared``, its own per ability otherwise) on the logit of p = 0.5."""
    out = {}
    runs = {(n, s): rng.standard_normal() for n in ns for s in range(seeds)}
    for a in range(abilities):
        for n in ns:
            rows = []
            for s in range(seeds):
                u = np.sqrt(shared) * runs[(n, s)] + np.sqrt(1 - shared) * rng.standard_normal()
                p = 1 / (1 + np.exp(-0.5 * u))
                rows.append(rng.random(items) < p)
            out[(f"a{a}", n)] = np.array(rows, float)
    return out


def _rows(compare, arms) -> dict:
    return {r["measure"]: r for r in compare.seed_correlation(arms, replicates=200)}


def test_seed_correlation_tells_a_shared_seed_effect_from_independent_ones():
    compare, rng = _compare(), np.random.default_rng(0)
    shared = _rows(compare, {"x": _arm(rng, 1.0), "y": _arm(rng, 1.0)})
    apart = _rows(compare, {"x": _arm(rng, 0.0), "y": _arm(rng, 0.0)})
    for measure in ("seed_corr_across_abilities", "seed_component_corr"):
        assert shared[measure]["value"] > 0.6 and shared[measure]["lo"] > 0.3
        assert abs(apart[measure]["value"]) < 0.2
        assert apart[measure]["lo"] < 0.05 and apart[measure]["hi"] > -0.05


def test_the_seed_components_correlation_is_net_of_the_items_flips():
    """On few items a shared seed effect's runs correlate well below 1 (their item flips are
    independent); the component's correlation takes the flips out and is near 1 again."""
    compare, rng = _compare(), np.random.default_rng(1)
    few = _rows(compare, {"x": _arm(rng, 1.0, items=100), "y": _arm(rng, 1.0, items=100)})
    runs, component = few["seed_corr_across_abilities"], few["seed_component_corr"]
    assert component["value"] > 0.85 and component["value"] - runs["value"] > 0.1, (
        runs["value"],
        component["value"],
    )
