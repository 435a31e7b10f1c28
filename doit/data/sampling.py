"""Seeded, order-free sampling: the one mechanism behind splits, subsets and mixes.

An item's rank is sha256(seed, purpose, ability, uid, idx): it depends on the item's
identity alone, never on file order or on the other items. A synthetic record's idx is
only its line position, so synthetic records are ranked and ordered by their content
hash (uid) alone: the same file in any line order gives the same samples. Taking the first n of
the ranking therefore gives nested samples (first n is inside first m for n < m),
identical on any machine and for any order of the input files.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from doit.data import abilities as ab


def identity(item: dict[str, Any]) -> tuple[str, int | str]:
    """What names an item: (ability, idx); synthetic records, whose idx is only their line
    position, are named by their content hash (uid) instead."""
    if item["ability"] == ab.SYNTHETIC:
        return item["ability"], item["uid"]
    return item["ability"], item["idx"]


def rank_key(seed: int, purpose: str, item: dict[str, Any]) -> str:
    token = f"{seed}\0{purpose}\0{item['ability']}\0{item['uid']}"
    if item["ability"] != ab.SYNTHETIC:
        token += f"\0{item['idx']}"
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def ranked(items: Iterable[dict[str, Any]], seed: int, purpose: str) -> list[dict[str, Any]]:
    """``items`` in their seeded random order for ``purpose`` (e.g. "subset", "split")."""
    return sorted(items, key=lambda it: rank_key(seed, purpose, it))


def by_ability(items: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for it in items:
        groups[it["ability"]].append(it)
    return dict(groups)


def take(items: list[dict[str, Any]], n: int, seed: int, purpose: str) -> list[dict[str, Any]]:
    """The first ``n`` of the seeded ranking, returned in ``identity`` order."""
    return sorted(ranked(items, seed, purpose)[:n], key=identity)
