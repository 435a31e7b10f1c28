"""The policy registry (doit.analysis.curriculum.policies.REGISTRY): every list of policies is
read from it, a new policy is one function and one record, and every policy's model answers
the `Predictor` protocol."""

from __future__ import annotations

import inspect
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from doit.analysis import curriculum as cur
from doit.analysis.cli import build_parser, main
from doit.analysis.curriculum import Options, make, policies
from doit.analysis.curriculum.options import SETTINGS
from doit.analysis.curriculum.policies import REGISTRY, Allocation, Policy, Predictor
from doit.data import abilities as ab
from doit.data.mixes import load_mix, resolve_counts
from tests.analysis.studies import mix_study

KEYS = ab.ABILITY_KEYS
POOLS = ",".join(f"{k}=1000" for k in KEYS)
BUDGET = 640


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """A small planted study with leave-one-out and random-mix cells (a results table)."""
    table = mix_study()
    path = tmp_path_factory.mktemp("policies") / "results.csv"
    table.to_csv(path, index=False)
    return path


def policy_help() -> str:
    steps = next(a for a in build_parser()._actions if a.dest == "step")
    curriculum = steps.choices["curriculum"]
    return next(a.help for a in curriculum._actions if a.dest == "policy")


def toy(ev) -> Allocation:
    """Every ability its floor, the rest of the budget to the first."""
    counts = dict(ev.lower)
    counts[ev.abilities[0]] += ev.options.budget - sum(counts.values())
    return Allocation(counts, ev.model, ["toy: the rest to the first ability"])


TOY = Policy("toy", toy, "the rest to the first ability", equal_budget=False)


def test_the_registry_is_well_formed():
    names = [p.name for p in REGISTRY]
    assert len(set(names)) == len(names)
    assert [p.name for p in REGISTRY if p.baseline] == ["uniform"] == [policies.baseline().name]
    assert REGISTRY[0].baseline and REGISTRY[0].equal_budget  # made first, spends the budget
    assert policies.get("regression").needs == {"mix"}
    with pytest.raises(cur.CurriculumError, match="--policy 'nope': expected one of uniform"):
        policies.get("nope")


def test_every_list_of_policies_is_the_registrys(monkeypatch):
    def lists() -> dict:
        return {
            "POLICIES": policies.names(),
            "EQUAL_BUDGET": policies.equal_budget(),
            "help": policy_help(),
            "plain study": policies.allowed(["base", "curated"]),
            "study with mixes": policies.allowed(["base", "curated", "mix"]),
            "asked marginal": [p.name for p in policies.run_order(["marginal"])],
        }

    def check(registry):
        got = lists()
        names = tuple(p.name for p in registry)
        assert got["POLICIES"] == names
        assert got["EQUAL_BUDGET"] == tuple(p.name for p in registry if p.equal_budget)
        assert all(f"{n} (" in got["help"] for n in names)
        assert got["study with mixes"] == names
        assert got["plain study"] == tuple(p.name for p in registry if not p.needs)
        assert got["asked marginal"] == ["uniform", "marginal"]

    check(REGISTRY)
    assert "regression" not in lists()["plain study"]
    assert "maximum" not in policies.equal_budget()
    # a record added to the registry shows up in every list (none of them is a copy)
    monkeypatch.setattr(policies, "REGISTRY", (*REGISTRY, TOY))
    check(policies.REGISTRY)
    assert "toy (the rest to the first ability, ignores the budget)" in policy_help()


def test_a_new_policy_is_one_function_and_one_record(study, tmp_path, monkeypatch):
    monkeypatch.setattr(policies, "REGISTRY", (*REGISTRY, TOY))
    out = tmp_path / "out"
    argv = ["curriculum", str(study), "--budget", str(BUDGET), "--policy", "toy"]
    assert main([*argv, "--out", str(out), "--pools", POOLS, "--replicates", "20"]) == 0
    table = pd.read_csv(out / "curriculum.csv").set_index(["policy", "ability"])
    assert list(dict.fromkeys(table.index.get_level_values(0))) == ["uniform", "toy"]
    first = KEYS[0]
    assert table.loc[("toy", first), "n"] == BUDGET - (len(KEYS) - 1)
    assert (table.loc["toy"].drop(["macro", first])["n"] == 1).all()
    assert not table.loc[("toy", "macro"), "equal_budget"]  # from the record
    assert table.loc[("uniform", "macro"), "equal_budget"]
    assert np.isfinite(table.loc[("toy", "macro"), "gain"])  # against uniform, same model
    mix = load_mix(out / "mixes" / f"toy-{BUDGET}.yaml")
    assert resolve_counts(mix, dict.fromkeys(KEYS, 1000))[first] == BUDGET - (len(KEYS) - 1)


def test_every_policys_model_is_a_predictor(study):
    options = Options(
        budget=BUDGET,
        policies=policies.names(),
        pools=dict.fromkeys(KEYS, 1000),
        settings=replace(SETTINGS, replicates=20),
    )
    result = make(study, options)
    kinds = {type(a.model).__name__ for a in result.allocations.values()}
    assert kinds == {"ScoreModel", "RegressionModel"}
    for alloc in result.allocations.values():
        model = alloc.model
        assert isinstance(model, Predictor)
        for name in ("predict", "extrapolated"):
            want = list(inspect.signature(getattr(Predictor, name)).parameters)[1:]
            assert list(inspect.signature(getattr(model, name)).parameters) == want
        point, reps = model.predict(alloc.counts)
        assert point.shape == (len(KEYS),) and reps.shape == (20, len(KEYS))
        assert isinstance(model.extrapolated(KEYS[0], 10**6), bool)
        assert model.extrapolated(KEYS[0], 10**6)  # far beyond anything the study trained
        assert isinstance(model.label, str) and model.label
    # the protocol can fail: a model without ``extrapolated`` does not answer it
    assert not isinstance(object(), Predictor)
