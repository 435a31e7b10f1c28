"""The fictional world of the micro corpus: deterministic, unique names, disjoint fact splits."""

from __future__ import annotations

import random

from doit.data.micro.world import FACT_ATTRS, build_world, split_facts


def test_world_is_deterministic_and_names_are_unique():
    first, second = build_world(0), build_world(0)
    assert first.entities == second.entities and build_world(1).entities != first.entities
    names = [e["name"] for group in first.entities.values() for e in group]
    assert len(names) == len(set(names))
    for group, attrs in FACT_ATTRS.items():
        assert all(set(attrs) <= set(e) for e in first.entities[group])


def test_fact_splits_are_disjoint_and_cover_every_fact():
    world = build_world(0)
    facts = world.facts("species")
    splits = split_facts(facts, random.Random(0), 0.18)
    keys = [f.key for part in splits.values() for f in part]
    assert len(keys) == len(set(keys)) == len(facts)
