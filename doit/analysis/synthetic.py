"""Planted studies: results tables drawn from known curves with binomial item noise, for testing
and benchmarking the analysis (``planted_study``; the tests' and bench/analysis.py's one
generator). Every ability's true score is

    p(base, n) = c + (1 - c) * sigmoid(a + b_data * log4 n + b_size * log2(params / params_min))

(``form="logistic"``) or ``a + b_data * log4 n + b_size * log2(...)`` clipped to [c, 1]
(``form="loglinear"``); items are scored correct with probability p, independently per cell.
``truth`` holds the sensitivities the analysis should recover, with its own definitions.

Transfer: an ability trained on n_own items beside others averaging n_other items each scores

    S(n_own, n_other) = c + (1 - T) (p(n_own) - c) + T (p(n_other) - c),   p(0) = c

with T the curve's ``transference`` (``Curve.score``): a uniform cell (n_own = n_other = n)
scores p(n), a leave-one-out cell (n_own = 0) keeps the share T of the gain. ``mixes`` adds
mixture cells (ability -> items) scored this way; ``tokens`` adds each ability's assistant
tokens per item (``n_own`` and ``tokens_own`` columns).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from doit.analysis.bootstrap import percent
from doit.grid.results import frame


@dataclass
class Curve:
    a: float = -1.0
    b_data: float = 0.4
    b_size: float = 0.3
    chance: float = 0.25
    form: str = "logistic"
    transference: float = 0.5  # share of the full-mix gain a leave-one-out cell keeps

    def p(self, params: float, params_min: float, n: float) -> float:
        x = (
            self.a
            + self.b_data * np.log(n) / np.log(4)
            + self.b_size * np.log2(params / params_min)
        )
        if self.form == "logistic":
            return self.chance + (1 - self.chance) / (1 + np.exp(-x))
        return float(np.clip(x, self.chance, 0.999))

    def score(self, params: float, params_min: float, n_own: float, n_other: float) -> float:
        """The planted score with transfer (module docstring): ``n_other`` is the mean number
        of items of each other ability."""
        c, t = self.chance, self.transference
        own = self.p(params, params_min, n_own) - c if n_own > 0 else 0.0
        other = self.p(params, params_min, n_other) - c if n_other > 0 else 0.0
        return c + (1 - t) * own + t * other


BASES = {"s": 10_000_000, "m": 40_000_000, "l": 160_000_000}
NS = (4, 16, 64, 256, 1024, 4096)


def planted_study(
    curves: dict[str, Curve],
    bases: dict[str, int] | None = None,
    ns=NS,
    n_items: int = 100,
    seeds: int = 1,
    loo_ns=(),
    epochs=(5.0, 10.0),
    per_item: bool = True,
    rng: int | np.random.Generator = 0,
    mixes: dict[str, dict[str, int]] | None = None,
    tokens: dict[str, float] | None = None,
):
    """(table, items or None, truth): a uniform grid (+ base cells, + leave-one-out cells at
    ``loo_ns``, + a cell per mixture of ``mixes`` (name -> ability -> items) on every base)
    with valid scores at every epoch and test items at every epoch."""
    rng = np.random.default_rng(rng)
    bases = bases or {k: BASES[k] for k in ("s", "l")}
    pmin = min(bases.values())
    rows, items = [], []
    cells = []  # (cell, base, params, construction, n, excluded, seed, epochs, mix)
    for base, params in bases.items():
        cells.append((f"{base}-base", base, params, "base", 0, None, 0, (0.0,), None))
        for n in ns:
            for s in range(seeds):
                cells.append(
                    (f"{base}-n{n}-s{s}", base, params, "curated", n, None, s, epochs, None)
                )
            if n in loo_ns:
                for a in curves:
                    cell = f"{base}-n{n}-loo-{a}"
                    cells.append((cell, base, params, "curated", n, a, 0, epochs, None))
    for name in mixes or {}:  # after the grid: the grid's draws are those of a study without
        for base, params in bases.items():
            for s in range(seeds):
                cells.append(
                    (f"{base}-{name}-s{s}", base, params, "mix", None, None, s, epochs, name)
                )
    k = len(curves)
    for cell, base, params, construction, n, excluded, seed, eps, mix in cells:
        own = (
            mixes[mix]
            if mix
            else {a: 0 if construction == "base" or a == excluded else n for a in curves}
        )
        n_total = sum(own.values())
        for epoch in eps:
            for a, curve in curves.items():
                if mix:
                    others = (n_total - own.get(a, 0)) / max(k - 1, 1)
                    p = curve.score(params, pmin, own.get(a, 0), others)
                else:
                    p = curve.p(params, pmin, n if n else min(ns) / 4)
                if excluded == a:
                    p = curve.chance + curve.transference * (p - curve.chance)
                spent = {} if tokens is None else {"tokens_own": own.get(a, 0) * tokens[a] * epoch}
                common = dict(
                    cell=cell,
                    base=base,
                    arch="llama",
                    params=params,
                    construction=construction,
                    mix=mix,
                    n_per_ability=n,
                    n_total=n_total,
                    seed=seed,
                    epoch=epoch,
                    step=int(epoch * 10),
                    ability=a,
                    chance=100 * curve.chance,
                    excluded_ability=excluded,
                    n_own=own.get(a, 0),
                    **spent,
                )
                valid = percent(rng.binomial(n_items, p), n_items)
                rows.append({**common, "split": "valid", "score": valid, "n_items": n_items})
                correct = rng.random(n_items) < p
                test = percent(correct.sum(), n_items)
                rows.append({**common, "split": "test", "score": test, "n_items": n_items})
                if per_item:
                    items += [
                        dict(
                            cell=cell,
                            epoch=epoch,
                            split="test",
                            ability=a,
                            type=f"{a}_test",
                            idx=i,
                            answer_kind="mc",
                            correct=bool(c),
                        )
                        for i, c in enumerate(correct)
                    ]
    table = frame(rows)
    item_table = frame(items, per_item=True) if per_item else None
    return table, item_table, truth(curves, bases, ns)


def truth(curves: dict[str, Curve], bases: dict[str, int], ns) -> pd.DataFrame:
    pmin, pmax = min(bases.values()), max(bases.values())
    out = []
    for a, c in curves.items():
        data = np.mean(
            [100 * (c.p(p, pmin, max(ns)) - c.p(p, pmin, min(ns))) for p in bases.values()]
        )
        size = np.mean([100 * (c.p(pmax, pmin, n) - c.p(pmin, pmin, n)) for n in ns])
        out.append(
            dict(
                ability=a,
                data_sensitivity=data / (np.log(max(ns) / min(ns)) / np.log(4)),
                size_sensitivity=size / np.log2(pmax / pmin) if pmax > pmin else np.nan,
                transference=c.transference,
            )
        )
    return pd.DataFrame(out)


def law_study(
    score,
    cells: dict[str, dict[str, int]],
    chance: dict[str, float],
    n_items: int = 100,
    params: int = BASES["s"],
    rng: int | np.random.Generator = 0,
) -> pd.DataFrame:
    """A one-base table of cells (name -> ability -> items) scored by any planted law
    ``score(counts) -> {ability: p}`` with binomial item noise, valid and test at epoch 5, no
    per-item rows: a cell with equal counts is a uniform cell, any other a mix cell."""
    rng = np.random.default_rng(rng)
    rows = []
    for name, counts in cells.items():
        p = score(counts)
        uniform = len(set(counts.values())) == 1 and set(counts) == set(chance)
        n = next(iter(counts.values())) if uniform else None
        for a, c in chance.items():
            common = dict(
                cell=name,
                base="s",
                arch="llama",
                params=params,
                construction="curated" if uniform else "mix",
                mix=None if uniform else name,
                n_per_ability=n,
                n_total=sum(counts.values()),
                seed=0,
                epoch=5.0,
                step=50,
                ability=a,
                chance=100 * c,
                n_items=n_items,
                n_own=counts.get(a, 0),
            )
            for split in ("valid", "test"):
                k = rng.binomial(n_items, float(np.clip(p[a], 0, 1)))
                rows.append({**common, "split": split, "score": percent(k, n_items)})
    return frame(rows)


def planted_macro(
    curves: dict[str, Curve], counts: dict[str, int], params: float = 1.0, params_min: float = 1.0
) -> float:
    """The planted macro score (0-100) of an allocation, transfer included (``Curve.score``)."""
    total, k = sum(counts.values()), len(curves)
    return 100 * float(
        np.mean(
            [
                c.score(params, params_min, counts[a], (total - counts[a]) / max(k - 1, 1))
                for a, c in curves.items()
            ]
        )
    )


def oracle_allocation(
    curves: dict[str, Curve],
    budget: int,
    lower: int = 1,
    upper: int = 1000,
    params: float = 1.0,
    params_min: float = 1.0,
) -> dict[str, int]:
    """The exact optimum of the planted macro at ``budget`` items, each ability within
    [lower, upper] (`doit.analysis.curriculum.optimise.maximise`)."""
    from doit.analysis.curriculum.optimise import maximise

    k, n = len(curves), np.arange(lower, upper + 1)
    values = [
        np.array([c.score(params, params_min, x, (budget - x) / max(k - 1, 1)) for x in n])
        for c in curves.values()
    ]
    extra = maximise(values, budget - lower * k)
    return {a: lower + x for a, x in zip(curves, extra)}
