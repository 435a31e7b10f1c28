"""Planted studies, for testing and benchmarking the analysis.

``planted_world`` (issue #29; the section "The planted world" below) has the structure real
studies have: items fixed across cells with a per-item difficulty, a per-cell training-seed
effect, untuned scores off chance, and misspecified abilities (a plateau just past the grid, one
that saturates inside it, a dip after the first n, a size effect without a data effect, a harmful data effect, interference);
its truth applies sensitivity.py's definitions to its own noise-free curves. Every coverage,
power and oracle check runs on it (bench/coverage.py).

``planted_study`` is the older generator (curves of the fit's own logistic form with binomial
item noise), kept for the tests whose checks need that form. Every ability's true score is

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
from pathlib import Path

import numpy as np
import pandas as pd

from doit.analysis.bootstrap import percent
from doit.grid.results import ITEM_COLUMNS, frame, write_shard
from doit.io import OutputError, atomic_path


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


# ---------------------------------------------------------------------------------------------
# The planted world (issue #29): the structure real studies have, for coverage and power checks.
# ---------------------------------------------------------------------------------------------
#
# Every ability a of a world has planted levers (`Levers`); item i of split s (a fixed item set
# per ability and split, shared by every cell) is answered correctly in cell c with probability
#
#     p = floor + (ceiling - floor) * sigmoid(eta(base, n, n_other) - d_i + e_c)
#     eta = alpha + beta_size * log2(params / params_min) + beta_data * t - dip(t)
#           - interference * log4(1 + n_other),   t = log4(1 + n)
#
# d_i ~ N(0, item_sd) the item's difficulty (logit), e_c ~ N(0, seed_sd) the cell's training
# seed effect (one draw per trained cell and ability, shared by its epochs and splits; the
# untuned n = 0 cells have none), n_other the mean items of each other ability (n in a uniform
# cell). At n = 0 the score is the base's own untuned score, off chance on either side (the
# floor may lie below chance). The planted truth (`PlantedWorld.truth`) applies sensitivity.py's
# definitions to the expected score averaged over the item-difficulty distribution and the
# training seeds (Gauss-Hermite quadrature; `seed_averaged`): what a point's pooled seeds
# estimate, and what a user who trains one more seed expects. The untuned cells have no seed.
# The levers are solved on the seed-free curve (seed effect 0); with seed_sd 0.4 the two
# truths differ by 0.04 points on average (at most 0.15; about 1%). Valid and test are
# separate item sets.

KINDS = ("smooth", "plateau", "saturating", "dip", "size_only", "harmful", "interference")
# The stated distributions the levers are drawn from (points; uniform on each range):
DATA_SENSITIVITY = (-5.0, 15.0)  # per 4x n: the spread of studies/micro_study/text/sensitivity.csv
SIZE_SENSITIVITY = (-2.0, 8.0)  # per doubling of params: the same file's spread
HARMFUL_DATA = (-6.0, -3.0)  # the harmful kind's data sensitivity (code's -5 in the micro study)
SIZE_ONLY_SIZE = (3.0, 8.0)  # the size_only kind's size sensitivity (its data effect is 0)
PLATEAU_RISE = (20.0, 40.0)  # the plateau kind's ceiling minus its untuned score
SATURATING_RISE = (30.0, 50.0)  # the saturating kind's: its whole rise, made inside the grid
UNTUNED = (-6.0, 20.0)  # the untuned score minus chance (micro study: -5 to +35)
FLOOR_SHARE = (0.5, 1.0)  # the lower asymptote as a share of chance
CEILING = (0.85, 0.99)  # the upper asymptote
DIP_DEPTH = (0.5, 1.0)  # logit lost at the grid's first n > 0, fading by e per 4x after it
INTERFERENCE = (0.3, 0.6)  # logit lost per log4(1 + n_other)
PLATEAU_PAST = 1.5  # a plateau's saturation_n is this many times the grid's largest n
SATURATING_AT = 1 / 8  # the saturating kind's: 1.5 4x steps inside the grid (a true plateau)
ITEM_SD = 1.0  # the item difficulty's SD (logit)
# The micro study's chance per ability (studies/micro_study/text/scores.csv), in points.
CHANCE = {
    "biology": 25.0,
    "history": 36.0,
    "code": 33.3,
    "creative_writing": 33.3,
    "chinese": 13.5,
    "understanding": 29.0,
    "role_play": 33.3,
    "reasoning": 25.0,
    "math": 0.0,
    "ethics": 20.2,
}
# The default world: five smooth abilities and one of each misspecification.
DEFAULT_KINDS = {
    "biology": "smooth",
    "history": "saturating",
    "code": "harmful",
    "creative_writing": "plateau",
    "chinese": "smooth",
    "understanding": "size_only",
    "role_play": "dip",
    "reasoning": "smooth",
    "math": "smooth",
    "ethics": "interference",
}


@dataclass(frozen=True)
class Design:
    """A study's shape: its bases (name -> non-embedding params), its n grid (0: the untuned
    base), test (and valid) items per ability, training seeds and scored epochs."""

    name: str
    bases: dict
    ns: tuple
    n_items: int = 100
    seeds: int = 1
    epochs: tuple = (5.0, 10.0)
    loo: tuple = ()  # n of the leave-one-ability-out cells on the largest base (seed 0)

    @property
    def trained_ns(self) -> tuple:
        return tuple(n for n in self.ns if n > 0)


PAPER_BASES = {  # recipes/grids/paper.yaml
    "chinese-llama-plus-7b": 6_476_271_616,
    "chinese-llama-plus-13b": 12_688_184_320,
    "chinese-llama-plus-33b": 32_102_959_616,
}
DESIGNS = {
    "a": Design("a", {"xs": 10_000_000, "s": 22_000_000}, (0, 4, 16, 64, 256)),
    "b": Design(
        "b",
        {"s": 1_000_000_000, "m": 2_828_427_125, "l": 8_000_000_000},
        (0, 4, 16, 64, 256),
        n_items=400,
        seeds=2,
    ),
    "c1": Design("c1", PAPER_BASES, (0, 1, 4, 16, 64, 256, 1000)),  # the study trained 1 seed
    "c3": Design("c3", PAPER_BASES, (0, 1, 4, 16, 64, 256, 1000), seeds=3),
}
DESIGNS["c"] = DESIGNS["c1"]  # the study's design as it was run (one seed)

_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(41)  # E over N(0, 1): sum w f(x)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()
FAR = 1e12  # "n -> infinity" for a curve's top


def _log4(x):
    return np.log(x) / np.log(4)


@dataclass(frozen=True)
class Levers:
    """One ability's planted levers (the module's planted-world formula); scores 0-1."""

    kind: str
    chance: float
    floor: float
    ceiling: float
    alpha: float = 0.0  # logit at the smallest base, untuned
    beta_data: float = 0.0  # logit per log4(1 + n)
    beta_size: float = 0.0  # logit per doubling of params
    dip: float = 0.0  # logit lost at the grid's first n > 0 ...
    dip_at: float = 1.0  # ... that n
    interference: float = 0.0  # logit lost per log4(1 + n_other)
    item_sd: float = ITEM_SD  # the item difficulty's SD (logit)

    def eta(self, doublings, n, n_other=None):
        """The logit of an item of difficulty 0 (arrays broadcast)."""
        n = np.asarray(n, float)
        n_other = n if n_other is None else np.asarray(n_other, float)
        t = _log4(1 + n)
        t_dip = _log4(1 + self.dip_at)
        dip = np.where(n >= self.dip_at, self.dip * np.exp(-np.clip(t - t_dip, 0, None)), 0.0)
        return (
            self.alpha
            + self.beta_size * np.asarray(doublings, float)
            + self.beta_data * t
            - dip
            - self.interference * _log4(1 + n_other)
        )

    def score(self, eta):
        """The probability of a correct answer at logit ``eta``."""
        return self.floor + (self.ceiling - self.floor) / (1 + np.exp(-eta))

    def expected(self, doublings, n, n_other=None, shift: float = 0.0):
        """The score (0-1) averaged over the item-difficulty distribution; ``shift``: a seed
        effect added to every item's logit (0: none)."""
        eta = np.asarray(self.eta(doublings, n, n_other), float) + shift
        grid = eta[..., None] - self.item_sd * _NODES
        return self.score(grid) @ _WEIGHTS

    def score_logit_slope(self, doublings, n, h: float = 1e-3) -> float:
        """How far the logit of a cell's expected score moves per logit of seed effect on its
        items (< 1: item heterogeneity and the floor and ceiling damp it). The analysis states
        ``--seed-sd`` on the cell score's logit; the world's ``seed_sd`` is on the items'."""
        up, down = (float(self.expected(doublings, n, shift=s)) for s in (h, -h))
        return float((np.log(up / (1 - up)) - np.log(down / (1 - down))) / (2 * h))


def _doublings(design: Design) -> dict:
    low = min(design.bases.values())
    return {b: np.log2(p / low) for b, p in design.bases.items()}


def seed_averaged(lev: Levers, seed_sd: float) -> Levers:
    """The levers whose expected score is ``lev``'s averaged over training seeds as well as
    items: a seed effect N(0, seed_sd) adds to every item's logit as the difficulty N(0,
    item_sd) subtracts, so the two average as one normal of SD sqrt(item_sd^2 + seed_sd^2)."""
    from dataclasses import replace

    return replace(lev, item_sd=float(np.hypot(lev.item_sd, seed_sd))) if seed_sd else lev


def planted_data_sensitivity(lev: Levers, design: Design, seed_sd: float = 0.0) -> float:
    """sensitivity.py's data_sensitivity of the expected curves (averaged over training seeds
    of SD ``seed_sd``): points per 4x between the smallest and largest n > 0, averaged over
    bases."""
    lev = seed_averaged(lev, seed_sd)
    lo, hi = min(design.trained_ns), max(design.trained_ns)
    rises = [np.diff(lev.expected(s, [lo, hi]))[0] for s in _doublings(design).values()]
    return float(100 * np.mean(rises) / _log4(hi / lo))


def planted_size_sensitivity(lev: Levers, design: Design, seed_sd: float = 0.0) -> float:
    """sensitivity.py's size_sensitivity of the expected curves (averaged over training seeds
    of SD ``seed_sd``): points per doubling between the smallest and largest base, averaged
    over n > 0 (NaN with one base)."""
    lev = seed_averaged(lev, seed_sd)
    span = max(_doublings(design).values())
    if span <= 0:
        return np.nan
    ns = np.asarray(design.trained_ns, float)
    rises = lev.expected(span, ns) - lev.expected(0.0, ns)
    return float(100 * np.mean(rises) / span)


def planted_saturation(
    lev: Levers, design: Design, share: float = 0.95, seed_sd: float = 0.0
) -> float:
    """sensitivity.py's saturation_n of the base-averaged expected curve: the smallest n >= the
    grid's smallest n > 0 where it has made ``share`` of its rise from its floor (its value as
    n -> 0: the untuned score, as the fitted floor is anchored there) to its top (its value as
    n -> infinity); NaN when the top is not above the floor. May lie beyond the grid. The
    trained curve is averaged over training seeds of SD ``seed_sd``; the untuned floor has none."""
    n = np.geomspace(min(design.trained_ns), FAR, 1500)
    s = np.asarray(list(_doublings(design).values()))[:, None]
    curve = seed_averaged(lev, seed_sd).expected(s, n[None, :]).mean(0)
    top, start = curve[-1], float(lev.expected(s, 0.0).mean())
    if top <= start:
        return np.nan
    reached = np.nonzero(curve >= start + share * (top - start))[0]
    return float(n[reached[0]])


def planted_class(value: float, delta: float) -> str:
    """The planted class of a true sensitivity with margin ``delta`` (sensitivity.DELTA): the
    analysis's rule (`sensitivity.classify`) read at a value known without noise."""
    from doit.analysis.sensitivity import UNDETERMINED, classify

    return UNDETERMINED if np.isnan(value) else classify(value, value, delta)


def planted_truth(levers: dict, design: Design, seed_sd: float, delta: float | None = None):
    """One row per ability: the planted sensitivities, classes, saturation and levers."""
    from doit.analysis.sensitivity import DELTA

    delta = DELTA if delta is None else delta
    rows = []
    for a, lev in levers.items():
        data = planted_data_sensitivity(lev, design, seed_sd)  # the seed-averaged curves
        size = planted_size_sensitivity(lev, design, seed_sd)
        sat = planted_saturation(lev, design, seed_sd=seed_sd)
        data_class = planted_class(data, delta)
        untuned = [lev.expected(s, 0.0) for s in _doublings(design).values()]
        slopes = [
            lev.score_logit_slope(s, n) for s in _doublings(design).values() for n in design.ns if n
        ]
        rows.append(
            dict(
                ability=a,
                kind=lev.kind,
                data_sensitivity=data,
                size_sensitivity=size,
                data_class=data_class,
                size_class=planted_class(size, delta),
                saturation_n=sat,
                saturates=bool(data_class == "responsive" and sat <= max(design.ns)),
                chance=100 * lev.chance,
                untuned=100 * float(np.mean(untuned)),
                floor=100 * lev.floor,
                ceiling=100 * lev.ceiling,
                seed_sd=seed_sd,
                # the same seed effect on the analysis's scale (the logit of a cell's score)
                seed_sd_score=seed_sd * float(np.sqrt(np.mean(np.square(slopes)))),
                item_sd=lev.item_sd,
                alpha=lev.alpha,
                beta_data=lev.beta_data,
                beta_size=lev.beta_size,
                dip=lev.dip,
                interference=lev.interference,
                delta=delta,
            )
        )
    return pd.DataFrame(rows)


def _solve(f, lo: float, hi: float, near: float = 0.0) -> float:
    """The root of ``f`` in [lo, hi] nearest ``near`` (a scan, then Brent's method inside the
    bracket; a planted sensitivity is not monotone in its lever once the curve saturates), or
    the scanned point nearest a root when there is none."""
    from scipy.optimize import brentq

    xs = np.linspace(lo, hi, 41)
    fs = np.array([f(x) for x in xs])
    changes = np.nonzero(np.sign(fs[:-1]) != np.sign(fs[1:]))[0]
    if not len(changes):
        return float(xs[np.argmin(np.abs(fs))])
    i = changes[np.argmin(np.abs(xs[changes] - near))]
    return float(brentq(f, xs[i], xs[i + 1], xtol=1e-7))


def draw_levers(
    kind: str, chance: float, design: Design, rng: np.random.Generator, data: float | None = None
) -> Levers:
    """An ability of ``kind`` (KINDS) with ``chance`` (points): floor, ceiling, untuned score
    and target sensitivities drawn from the stated ranges, then alpha, beta_data and beta_size
    solved so that the planted truth meets the targets (`_fit_targets`; a target
    that the floor or ceiling puts out of reach is met as nearly as it can be). ``data``: the
    data-sensitivity target (points per 4x) instead of its draw (the draws stay the same)."""
    from dataclasses import replace

    if kind not in KINDS:
        raise ValueError(f"planted ability kind {kind!r}: one of {', '.join(KINDS)}")
    c = chance / 100
    floor, ceiling = c * rng.uniform(*FLOOR_SHARE), rng.uniform(*CEILING)
    steps = _log4(max(design.trained_ns) / min(design.trained_ns))
    untuned = c + rng.uniform(*UNTUNED) / 100
    drawn = rng.uniform(*DATA_SENSITIVITY)  # drawn even when given: the later draws stay put
    data = drawn if data is None else data
    size = rng.uniform(*(SIZE_ONLY_SIZE if kind == "size_only" else SIZE_SENSITIVITY))
    if kind == "harmful":  # room to fall: twice the planted fall above the floor
        data = rng.uniform(*HARMFUL_DATA)
        untuned = floor + 2 * abs(data) * steps / 100
    untuned = float(np.clip(untuned, floor + 0.02, ceiling - 0.1))
    if kind == "plateau":  # a low ceiling, reached just past the grid
        ceiling = min(CEILING[1], untuned + rng.uniform(*PLATEAU_RISE) / 100)
    if kind == "saturating":  # the whole rise, reached inside the grid
        rise = rng.uniform(*SATURATING_RISE) / 100
        untuned = min(untuned, CEILING[1] - rise)
        ceiling = untuned + rise
    lev = Levers(kind, c, floor, ceiling)
    lev = replace(
        lev, alpha=_solve(lambda x: replace(lev, alpha=x).expected(0, 0) - untuned, -15, 15)
    )
    if kind == "dip":
        lev = replace(lev, dip=rng.uniform(*DIP_DEPTH), dip_at=min(design.trained_ns))
    if kind == "interference":
        lev = replace(lev, interference=rng.uniform(*INTERFERENCE))
    return _fit_targets(lev, design, data, size)


SATURATES_AT = {"plateau": PLATEAU_PAST, "saturating": SATURATING_AT}  # x the grid's largest n


def _fit_targets(lev: Levers, design: Design, data: float, size: float) -> Levers:
    """``lev`` with beta_size (the size target) and beta_data (the data target; a plateau's or
    a saturating kind's: its saturation_n at SATURATES_AT x the grid's largest n; size_only: 0)
    solved in turn, three
    rounds (each target moves a little with the other lever)."""
    for _ in range(3):  # the data lever last: its target is met exactly
        lev = _solve_lever(lev, "beta_size", _size_gap(lev, design, size))
        if lev.kind != "size_only":
            lev = _solve_lever(lev, "beta_data", _data_gap(lev, design, data))
    return lev


def _solve_lever(lev: Levers, name: str, gap) -> Levers:
    from dataclasses import replace

    rising = lev.kind in SATURATES_AT
    bounds = {"beta_size": (-4, 4), "beta_data": (0.05, 8) if rising else (-8, 8)}
    return replace(lev, **{name: _solve(gap, *bounds[name])})


def _data_gap(lev: Levers, design: Design, data: float):
    """beta_data -> how far the planted truth is from its target."""
    from dataclasses import replace

    def gap(b):
        moved = replace(lev, beta_data=b)
        if lev.kind in SATURATES_AT:
            sat = np.nan_to_num(planted_saturation(moved, design), nan=FAR)
            return np.log(sat / (SATURATES_AT[lev.kind] * max(design.ns)))
        return planted_data_sensitivity(moved, design) - data

    return gap


def _size_gap(lev: Levers, design: Design, size: float):
    from dataclasses import replace

    return lambda b: planted_size_sensitivity(replace(lev, beta_size=b), design) - size


@dataclass
class PlantedWorld:
    """A planted study: ``table`` (the results rows as doit.grid writes them), ``items`` (their
    per-item rows, valid and test), ``truth`` (`planted_truth`), ``levers`` (ability ->
    `Levers`), ``design`` and ``seed_sd``."""

    design: Design
    seed_sd: float
    levers: dict
    table: pd.DataFrame
    items: pd.DataFrame
    truth: pd.DataFrame

    def expected(self, ability: str, base: str, n: float, n_other: float | None = None) -> float:
        """The noise-free expected score (points) of ``ability`` on ``base`` after ``n`` of its
        own items beside ``n_other`` of each other ability's (default n: a uniform cell)."""
        lev = self.levers[ability]
        return 100 * float(lev.expected(_doublings(self.design)[base], n, n_other))

    def write(self, folder) -> Path:
        """A study folder `doit analysis run` reads: ``results/`` and ``items/`` shards per
        cell (items first, as doit.grid writes them) and ``planted.csv`` (the truth)."""
        folder = Path(folder)
        if folder.exists() and any(folder.iterdir()):
            raise OutputError(f"{folder}: not empty; a planted world is written to a new folder")
        items = self.items.groupby("cell", sort=True)
        for cell, rows in self.table.groupby("cell", sort=True):
            write_shard(folder, cell, items.get_group(cell), per_item=True)
            write_shard(folder, cell, rows)
        with atomic_path(folder / "planted.csv") as tmp:
            self.truth.to_csv(tmp, index=False)
        return folder


def planted_world(design, abilities=None, seed_sd: float = 0.4, rng=0) -> PlantedWorld:
    """A planted study of ``design`` (a `Design` or a key of DESIGNS): ``abilities`` maps
    ability -> kind (KINDS; its levers drawn by `draw_levers`) or -> `Levers` (used as they are);
    default DEFAULT_KINDS. ``seed_sd``: the training-seed effect's SD (logit)."""
    if isinstance(design, str) and design not in DESIGNS:
        raise ValueError(f"planted world design {design!r}: one of {', '.join(DESIGNS)}")
    design = DESIGNS[design] if isinstance(design, str) else design
    rng = np.random.default_rng(rng)
    kinds = DEFAULT_KINDS if abilities is None else abilities
    levers = {
        a: k if isinstance(k, Levers) else draw_levers(k, CHANCE.get(a, 25.0), design, rng)
        for a, k in kinds.items()
    }
    difficulty = {
        (a, split): rng.normal(0, lev.item_sd, design.n_items)
        for a, lev in levers.items()
        for split in ("valid", "test")
    }
    rows, keys, items = [], [], []
    for cell in _world_cells(design, tuple(levers)):
        for a, lev in levers.items():
            effect = rng.normal(0, seed_sd) if cell["n_per_ability"] else 0.0
            own, other = _cell_counts(cell, a, len(levers))
            eta = lev.eta(_doublings(design)[cell["base"]], own, other) + effect
            for epoch in cell["epochs"]:
                for split in ("valid", "test"):
                    correct = rng.random(design.n_items) < lev.score(eta - difficulty[a, split])
                    rows.append(_world_row(cell, a, lev, epoch, split, correct, len(levers)))
                    keys.append((cell["cell"], epoch, split, a))
                    items.append(correct)
    table = frame(rows)
    item_table = _item_rows(keys, items)
    return PlantedWorld(
        design, seed_sd, levers, table, item_table, planted_truth(levers, design, seed_sd)
    )


def _world_cells(design: Design, abilities=()) -> list[dict]:
    """The untuned base cell of every base (epoch 0), a cell per trained n and seed, and on
    the largest base a leave-one-out cell per ability at each of ``design.loo`` (seed 0)."""
    cells = []
    for base, params in design.bases.items():
        for n in design.ns:
            for seed in range(design.seeds if n else 1):
                name = f"{base}-n{n}-s{seed}" if n else f"{base}-base"
                epochs = design.epochs if n else (0.0,)
                cells.append(
                    dict(
                        cell=name,
                        base=base,
                        params=params,
                        n_per_ability=n,
                        seed=seed,
                        epochs=epochs,
                        excluded=None,
                    )
                )
    largest = max(design.bases, key=design.bases.get)
    for n in design.loo:
        for a in abilities:
            cells.append(
                dict(
                    cell=f"{largest}-n{n}-no_{a}-s0",
                    base=largest,
                    params=design.bases[largest],
                    n_per_ability=n,
                    seed=0,
                    epochs=design.epochs,
                    excluded=a,
                )
            )
    return cells


def _cell_counts(cell: dict, ability: str, k: int) -> tuple[float, float | None]:
    """(``ability``'s own items, each other ability's mean items; None: the same n) in a cell
    of k abilities: a leave-one-out cell gives the excluded ability none of its own beside the
    others' n, and every other ability its n beside k - 2 abilities' n and one's 0."""
    left, n = cell["excluded"], cell["n_per_ability"]
    if left is None:
        return n, None
    return (0, n) if ability == left else (n, n * (k - 2) / (k - 1))


def _world_row(cell, ability, lev, epoch, split, correct, k) -> dict:
    n = cell["n_per_ability"]
    left = cell.get("excluded")
    return dict(
        cell=cell["cell"],
        base=cell["base"],
        arch="llama",
        params=cell["params"],
        construction="curated" if n else "base",
        mix=None,
        excluded_ability=left,
        n_per_ability=n,
        n_total=n * (k - 1) if left else n * k,
        seed=cell["seed"],
        epoch=epoch,
        step=int(epoch * 10),
        split=split,
        ability=ability,
        score=percent(int(correct.sum()), len(correct)),
        n_items=len(correct),
        chance=100 * lev.chance,
        n_own=0 if ability == left else n,
        sample_seed=0,
        formulation="letter",
        cell_formulation="letter",
    )


def _item_rows(keys: list[tuple], correct: list[np.ndarray]) -> pd.DataFrame:
    """The per-item rows of every (cell, epoch, split, ability) of ``keys``: item idx i of type
    ``<ability>_<split>`` is correct[i]."""
    m = len(correct[0]) if correct else 0
    cell, epoch, split, ability = (np.repeat(np.asarray(c, object), m) for c in zip(*keys))
    return pd.DataFrame(
        dict(
            cell=cell,
            epoch=epoch.astype(float),
            split=split,
            ability=ability,
            type=ability + "_" + split,
            idx=np.tile(np.arange(m), len(keys)),
            answer_kind="mc",
            correct=np.concatenate(correct),
            formulation="letter",
        )
    ).astype(ITEM_COLUMNS)
