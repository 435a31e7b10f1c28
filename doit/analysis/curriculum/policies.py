"""The policies: each turns the evidence into items per ability (an ``Allocation``).

- ``uniform``: equal n per ability, capped at pools and caps (the study's baseline).
- ``reconstruct``: the study's heuristic from the analysis groups: a ``resistant_both`` or
  ``size_driven`` ability (data resistant) gets the uniform n with its highest observed score,
  a ``harmed_by_data`` one its floor, a ``saturating`` one its ``saturation_n`` (rounded up),
  and the rest (``undetermined`` included) share what is left equally (the mix schema's fill
  arithmetic, `doit.data.mixes.fill_equal`).
- ``maximum``: the same fixed counts, every other ability its whole pool (or cap); it ignores
  the budget and is left out of equal-budget comparisons.
- ``marginal``: the allocation that maximises the risk-aware fitted macro sum_a w_a (S_a -
  ``risk`` x SD_a) at the budget (`model.ScoreModel`, transfer-aware; SD_a the replicates' SD
  of S_a at its count: a separable surrogate of the macro's lower bound), solved exactly
  (`optimise.maximise`). No ability is floored by rule (one inside the equivalence margin
  competes like any other); ``--no-loss`` forbids a count predicted below the ability's uniform
  score by more than the MDE of that difference.
- ``regression``: the best mixture under the regressed law (`regression`).
- ``dmt``: DMT's staged recipe (Dong et al., ACL 2024) at uniform's counts: the ``specialist``
  abilities (default math and code, theirs) first, then the rest with ``replay`` of the first
  stage's items drawn again (`options.REPLAY_SHARE` of them by default). Against uniform it
  changes the order and the replay only.
- ``staged``: the fitted staged curriculum at marginal's counts: first the abilities marginal
  feeds above uniform (the fitted curves' data-hungry ones, as DMT's specialists are), then
  the rest with the replay. Both write a staged mix (`doit.data.mixes`, ``stages:``); the score
  model has no term for order or forgetting, so their predictions are those of the one mix of
  the same counts (said in their notes), and ``--validate`` measures what order changes.

Every count lies between the ability's floor and its pool (and cap); marginal and regression
also stay within the ability's reach (``Evidence.reach``: 1, or 4 where the study's held-out
one-step error for it is small; ``--reach`` for all) x the largest n the study observed for it,
unless the budget cannot be spent there (then the bound is lifted and a note names the grid
point that would let it be spent inside the evidence). With ``unit: tokens`` the
budget counts assistant tokens (each ability's tokens per item from the study): uniform and
reconstruct take the most items their rule gives within it, marginal and regression optimise
over token costs in quanta of budget / ``QUANTA`` (so they spend at most the budget), the
transfer term's N_other from the allocation itself by fixed-point iteration.

**The registry.** ``REGISTRY`` holds one `Policy` record per policy, in run order: its name, the
function that builds its allocation from the evidence, whether it spends the budget (and so is
compared with the baseline at it, and trained by ``--validate``), the results-table
constructions it needs beyond the uniform grid, and whether it is the baseline (uniform) every
gain is against. Every list of policies (``options.POLICIES``, ``EQUAL_BUDGET``, the CLI's
``--policy``, what ``run --budget`` makes) is read from it, so a new policy is one function and
one record.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from doit.analysis.curriculum import regression as reg
from doit.analysis.curriculum.optimise import Infeasible, maximise
from doit.analysis.curriculum.options import REPLAY_SHARE, CurriculumError
from doit.data.mixes import fill_equal

if TYPE_CHECKING:  # the evidence imports the analysis; a policy only reads it
    from doit.analysis.curriculum.evidence import Evidence

QUANTA = 20_000  # the token budget's resolution in the optimisers
FIXED_POINT_ROUNDS = 10


@runtime_checkable
class Predictor(Protocol):
    """What a policy's model answers (`model.ScoreModel`, `regression.RegressionModel`):
    curriculum.csv's scores, ``extrapolated`` flags and ``model`` column come from these."""

    @property
    def label(self) -> str:
        """The model's name in curriculum.csv and the mix's provenance."""
        ...

    def predict(self, counts: dict[str, int]) -> tuple[np.ndarray, np.ndarray | None]:
        """(K,) point scores (0-100) of the allocation ``counts`` and (R, K) bootstrap
        replicates, or None without replicates."""
        ...

    def extrapolated(self, a: str, n: float) -> bool:
        """Whether ``n`` items of ability ``a`` lie outside what the model was fitted on."""
        ...


@dataclass
class Allocation:
    """Items per ability, the model that predicts them and notes; ``policy`` is the name of
    the record that built it (`Policy.allocate`)."""

    counts: dict[str, int]
    model: Predictor
    notes: list[str] = field(default_factory=list)
    policy: str = ""
    stages: tuple[dict[str, int], ...] = ()  # a staged policy's counts per stage (in order)
    replay: int = 0  # items of the first stage drawn again in the second

    @property
    def equal_budget(self) -> bool:
        return get(self.policy).equal_budget


# --- equal shares -----------------------------------------------------------------------------
def equal_shares(total: int, keys, lower: dict, upper: dict) -> dict[str, int]:
    """``total`` items shared equally over ``keys``: an ability whose floor is above the share
    keeps its floor, one whose cap is below it takes its cap (`fill_equal`), what cannot be
    placed goes to abilities with room in registry order."""
    keys, out = list(keys), {}
    while keys:
        share = (total - sum(out.values())) // len(keys)
        low = [k for k in keys if lower[k] > share]
        if not low:
            break
        for k in low:
            out[k] = lower[k]
            keys.remove(k)
    out.update(fill_equal(total - sum(out.values()), tuple(keys), {k: upper[k] for k in keys}))
    for k in [k for k in upper if k in out]:  # floors fixed above the share leave room elsewhere
        short = total - sum(out.values())
        if short <= 0:
            break
        out[k] += min(short, upper[k] - out[k])
    return out


def most_within(ev: Evidence, make) -> dict[str, int]:
    """``make(items)`` for the most items whose cost is within the budget (unit tokens), or for
    the budget itself (unit items)."""
    if ev.options.unit == "items":
        return make(ev.options.budget)
    lo, hi = 0, int(sum(ev.upper.values()))
    while lo < hi:  # the largest total whose allocation fits the token budget
        mid = (lo + hi + 1) // 2
        if ev.cost(make(mid)) <= ev.options.budget:
            lo = mid
        else:
            hi = mid - 1
    return make(lo)


def uniform(ev: Evidence) -> Allocation:
    counts = most_within(ev, lambda n: equal_shares(n, ev.abilities, ev.lower, ev.upper))
    return Allocation(counts, ev.model)


# --- the study's heuristics -------------------------------------------------------------------
def _clamp(ev: Evidence, k: str, n: float) -> int:
    return int(min(max(n, ev.lower[k]), ev.upper[k]))


# reconstruct's fixed count per analysis group; every other group shares what is left equally
CUT_TO_BEST = ("resistant_both", "size_driven")  # data does not help: the best observed n
AT_FLOOR = ("harmed_by_data",)  # more data lowers the score: the floor


def study_caps(ev: Evidence) -> tuple[dict[str, int], list[str]]:
    """The counts the study's heuristics fix: resistant_both and size_driven (data resistant)
    -> the best observed uniform n, harmed_by_data -> the floor, saturating -> saturation_n
    (rounded up)."""
    fixed, notes = {}, []
    for k in ev.abilities:
        row = ev.groups.loc[k] if k in ev.groups.index else None
        if row is None:
            continue
        if row["group"] in CUT_TO_BEST and k in ev.best_n:
            fixed[k] = _clamp(ev, k, ev.best_n[k])
            notes.append(f"{k}: {row['group']}, its best observed n {ev.best_n[k]} -> {fixed[k]}")
        elif row["group"] in AT_FLOOR:
            fixed[k] = ev.lower[k]
            notes.append(f"{k}: {row['group']} (more data lowers it) -> its floor {fixed[k]}")
        elif row["group"] == "saturating" and np.isfinite(row["saturation_n"]):
            fixed[k] = _clamp(ev, k, math.ceil(row["saturation_n"]))
            notes.append(f"{k}: saturating at n = {row['saturation_n']:.0f} -> {fixed[k]}")
    return fixed, notes


def reconstruct(ev: Evidence) -> Allocation:
    fixed, notes = study_caps(ev)
    rest = [k for k in ev.abilities if k not in fixed]
    spare = ev.options.budget - ev.cost(fixed)
    if spare < ev.cost({k: ev.lower[k] for k in rest}):
        raise CurriculumError(
            f"reconstruct: its fixed counts ({ev.cost(fixed):g} {ev.options.unit}"
            f") leave too little of --budget {ev.options.budget} for the floors "
            "of the rest; raise --budget"
        )

    def make(n):
        return {**fixed, **equal_shares(n - sum(fixed.values()), rest, ev.lower, ev.upper)}

    return Allocation(_ordered(ev, most_within(ev, make)), ev.model, notes)


def maximum(ev: Evidence) -> Allocation:
    fixed, notes = study_caps(ev)
    counts = {k: fixed.get(k, ev.upper[k]) for k in ev.abilities}
    return Allocation(
        counts,
        ev.model,
        notes + ["maximum ignores --budget (every other ability takes its pool or cap)"],
    )


# --- optimisers ---------------------------------------------------------------------------------
def _bounds(ev: Evidence, top: dict[str, float], free) -> tuple[dict, list[str]]:
    """Upper bounds of the optimised abilities: within their reach (``ev.reach``) x ``top``
    (the most observed), unless the budget cannot be spent there: then the pools, with a note
    naming the grid point that would let it be spent inside the evidence."""
    reach = {k: _within(ev, k, ev.reach.get(k, 1.0) * top[k]) for k in free}
    fixed = {k: ev.lower[k] for k in ev.abilities if k not in free}
    if ev.cost({**fixed, **reach}) >= ev.options.budget:
        return reach, []
    n = _needed(ev, top, free, fixed)
    return (
        {k: ev.upper[k] for k in free},
        [
            f"the budget cannot be spent inside the evidence ({ev.cost({**fixed, **reach}):g} "
            f"{ev.options.unit} within each ability's reach x its largest observed n): add "
            f"n = {n} on {ev.target} to the grid (data.per_ability) to spend it there; counts "
            "beyond are allowed (and flagged extrapolated)"
        ],
    )


def _within(ev: Evidence, k: str, n: float) -> int:
    return max(ev.lower[k], min(ev.upper[k], int(n)))


def _needed(ev: Evidence, top: dict, free, fixed: dict) -> int:
    """The smallest largest-grid n at which the reach bounds would hold the budget."""
    largest = max(top[k] for k in free)
    lo, hi = int(largest), int(largest) * 2
    room = lambda n: ev.cost(  # noqa: E731
        {**fixed, **{k: _within(ev, k, ev.reach.get(k, 1.0) * top[k] * n / largest) for k in free}}
    )
    while room(hi) < ev.options.budget and hi < 10**9:
        lo, hi = hi, hi * 2
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if room(mid) < ev.options.budget else (lo, mid)
    return lo


def _solve(ev: Evidence, free, fixed: dict, high: dict, value) -> dict[str, int]:
    """Counts of ``free`` abilities maximising sum value(k, n) (n: array of counts) beside
    ``fixed``, within [floor, high], spending the budget."""
    lows = {k: ev.lower[k] for k in free}
    ranges = {k: np.arange(lows[k], high[k] + 1) for k in free}
    values = [value(k, ranges[k]) for k in free]
    try:
        if ev.options.unit == "items":
            spare = ev.options.budget - int(ev.cost({**fixed, **lows}))
            extra = maximise(values, spare)
        else:
            quantum = max(1.0, ev.options.budget / QUANTA)
            spare = int((ev.options.budget - ev.cost({**fixed, **lows})) // quantum)
            costs = [
                np.ceil((ranges[k] - lows[k]) * ev.tokens[k] / quantum).astype(int) for k in free
            ]
            extra = maximise(values, spare, costs)
    except Infeasible as e:
        raise CurriculumError(f"{e}; change --budget, --floors or --caps") from None
    return {**fixed, **{k: lows[k] + x for k, x in zip(free, extra)}}


def marginal(ev: Evidence) -> Allocation:
    """The counts maximising sum_a w_a (S_a - risk x SD_a) (module docstring), exactly."""
    m, o = ev.model, ev.options
    free = list(ev.abilities)
    high, notes = _bounds(ev, {k: m.grid_max for k in free}, free)
    base = uniform(ev).counts
    total = sum(base.values())
    for _ in range(FIXED_POINT_ROUNDS if o.unit == "tokens" else 1):
        counts = _solve(ev, free, {}, high, lambda k, n, t=total: objective(ev, k, n, t, base))
        if sum(counts.values()) == total:
            break
        total = sum(counts.values())
    if o.risk:
        notes.append(f"risk-aware: each ability's S_a - {o.risk:g} x its replicates' SD")
    if o.no_loss:
        notes.append("--no-loss: no ability predicted below uniform by more than its MDE")
    if not m.uses_transfer:
        notes.append("transfer-blind: S_a = U_a(n_a)")
    return Allocation(_ordered(ev, counts), m, notes)


def objective(ev: Evidence, k: str, n: np.ndarray, total: float, base: dict) -> np.ndarray:
    """w_k (S_k(n) - risk SD_k(n)) over the counts ``n``; with --no-loss -inf where S_k falls
    below its uniform score by more than the MDE of that difference (`sensitivity.power`
    at margin 0 of the replicates' SD of the paired difference)."""
    from doit.analysis.sensitivity import power

    m, o = ev.model, ev.options
    w = float(ev.weights[ev.abilities.index(k)])
    mean = m.values(k, n, total)
    reps = m.replicates(k, n, total) if (o.risk or o.no_loss) else None
    value = mean - (o.risk * reps.std(0, ddof=1) if reps is not None and o.risk else 0.0)
    if o.no_loss and reps is not None:
        u = np.array([base[k]], float)
        diff = reps - m.replicates(k, u, total)
        loss = mean - m.values(k, u, total)
        value = np.where(loss >= -power(diff.std(0, ddof=1), 0.0).mde, value, -np.inf)
    return w * value


def regression(ev: Evidence) -> Allocation:
    if ev.options.params is not None:
        raise CurriculumError(
            "regression predicts the bases its mixtures were trained on: give --base, not --params"
        )
    model = reg.fit(ev.mix_points, ev.options.model, ev.options.settings.seed)
    free = list(ev.abilities)
    high, notes = _bounds(ev, model.observed_max, free)
    if model.kind == "linear":
        gamma = dict(zip(ev.abilities, model.gammas(ev.weights)))
        counts = _solve(ev, free, {}, high, lambda k, n: gamma[k] * np.log1p(n))
    elif ev.options.unit == "tokens":
        raise CurriculumError(
            "--unit tokens is not supported with the lightgbm model (its "
            "search draws mixtures in items); use --model linear"
        )
    else:
        counts = _search(ev, model, high)
    cv = model.cv[model.cv["chosen"]]
    notes.append(
        f"{model.kind} model, cross-validated Spearman {cv['cv_spearman'].mean():.2f} "
        f"(mean over abilities), RMSE {cv['cv_rmse'].mean():.1f} points, "
        f"{int(cv['points'].iloc[0])} cells ({int(cv['mix_cells'].iloc[0])} mixes)"
    )
    return Allocation(_ordered(ev, counts), model, notes)


def _search(ev: Evidence, model, high: dict) -> dict[str, int]:
    """RegMix's search for a model that is not separable: the mean of the top mixtures of many
    drawn around the pool prior, rounded within the bounds."""
    from doit.grid import mix_counts as to_counts

    rng = np.random.default_rng(ev.options.settings.seed)
    keys = list(ev.abilities)
    lows = np.array([ev.lower[k] for k in keys], float)
    room = np.array([high[k] for k in keys], float) - lows
    budget = int(ev.options.budget - lows.sum())
    prior = np.array([ev.pools[k] for k in keys], float)
    draws = rng.dirichlet(len(keys) * prior / prior.sum(), size=reg.SEARCH)
    cand = lows + np.array([to_counts(p, budget, room) for p in draws], float)
    w = ev.weights / ev.weights.sum()
    macro = model.model.predict(cand) @ w
    top = cand[np.argsort(-macro)[: reg.TOP]].mean(0) - lows
    extra = to_counts(top / top.sum(), budget, room)
    return {k: int(lo + x) for k, lo, x in zip(keys, lows, extra)}


# --- staged -------------------------------------------------------------------------------------
def dmt(ev: Evidence) -> Allocation:
    """DMT's recipe at uniform's counts (module docstring)."""
    unknown = sorted(set(ev.options.specialist) - set(ev.abilities))
    if unknown:
        raise CurriculumError(
            f"--specialist {','.join(unknown)}: not among the study's abilities "
            f"({', '.join(ev.abilities)})"
        )
    base = uniform(ev)
    note = f"DMT: the specialists {', '.join(ev.options.specialist)} first"
    return staged_from(ev, base, list(ev.options.specialist), [note])


def staged(ev: Evidence) -> Allocation:
    """The fitted staged curriculum at marginal's counts (module docstring); when marginal
    feeds every ability or none above uniform, the first stage is the abilities whose data
    sensitivity is above the median."""
    fitted, even = marginal(ev), uniform(ev).counts
    first = [k for k in ev.abilities if fitted.counts[k] > even[k]]
    why = "first: the abilities marginal feeds above uniform"
    if not 0 < len(first) < len(ev.abilities):
        sens = ev.groups["data_sensitivity"].reindex(list(ev.abilities))
        first = [k for k in ev.abilities if sens[k] > sens.median()]
        why = "first: the abilities whose data sensitivity is above the median"
    return staged_from(ev, fitted, first, [*fitted.notes, why])


def staged_from(ev: Evidence, alloc: Allocation, first: list[str], notes: list[str]):
    """``alloc``'s counts in two stages: ``first``, then the others with the replay."""
    counts = alloc.counts
    one = {k: counts[k] for k in ev.abilities if k in first and counts[k] > 0}
    two = {k: counts[k] for k in ev.abilities if k not in first and counts[k] > 0}
    if not one or not two:
        raise CurriculumError(
            f"a staged curriculum needs items in both stages; first {sorted(one) or 'none'}, "
            f"then {sorted(two) or 'none'}: change --specialist or --budget"
        )
    n1 = sum(one.values())
    replay = ev.options.replay
    replay = round(n1 * REPLAY_SHARE) if replay is None else min(replay, n1)
    notes = notes + [
        f"stage 1: {', '.join(one)} ({n1} items); stage 2: the rest ({sum(two.values())} "
        f"items) with {replay} of stage 1's replayed; each stage a fresh optimiser",
        "predicted as the one mix of the same counts: the score model has no term for order "
        "or forgetting (--validate measures them)",
    ]
    return Allocation(_ordered(ev, counts), alloc.model, notes, stages=(one, two), replay=replay)


def _ordered(ev: Evidence, counts: dict) -> dict[str, int]:
    return {k: int(counts.get(k, 0)) for k in ev.abilities}


# --- the registry -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Policy:
    """One policy: everything the curriculum, its CLI and ``--validate`` know of it."""

    name: str
    build: Callable[[Evidence], Allocation]  # the evidence -> its allocation
    summary: str  # a few words for --policy's help
    equal_budget: bool = True  # spends the budget: compared with the baseline there, validated
    needs: frozenset[str] = frozenset()  # constructions it needs beyond the uniform grid's cells
    baseline: bool = False  # the policy every gain is against, always made, first
    crossfit: bool = False  # chooses from the fitted curves: its predicted gain is cross-fitted
    staged: bool = False  # orders another policy's counts in stages (predicted as that mix)

    def allocate(self, ev: Evidence) -> Allocation:
        return dataclasses.replace(self.build(ev), policy=self.name)


# in run order (the baseline first: the others' gains are against it)
REGISTRY: tuple[Policy, ...] = (
    Policy("uniform", uniform, "equal n per ability", baseline=True),
    Policy("reconstruct", reconstruct, "the study's heuristics from the analysis groups"),
    Policy(
        "maximum", maximum, "reconstruct's fixed counts, the rest their pools", equal_budget=False
    ),
    Policy(
        "marginal",
        marginal,
        "the fitted curves' best risk-aware macro at the budget",
        crossfit=True,
    ),
    Policy(
        "regression", regression, "RegMix: a law regressed on the mixes", needs=frozenset({"mix"})
    ),
    Policy(
        "dmt",
        dmt,
        "DMT's staged recipe at uniform's counts: --specialist first, replay",
        staged=True,
    ),
    Policy(
        "staged",
        staged,
        "a staged mix at marginal's counts: the abilities fed above uniform first, replay",
        crossfit=True,
        staged=True,
    ),
)


def names() -> tuple[str, ...]:
    """Every policy's name, in run order."""
    return tuple(p.name for p in REGISTRY)


def equal_budget() -> tuple[str, ...]:
    """The policies that spend the budget (``maximum`` ignores it)."""
    return tuple(p.name for p in REGISTRY if p.equal_budget)


def baseline() -> Policy:
    """The policy the others are compared with (uniform)."""
    (base,) = [p for p in REGISTRY if p.baseline]
    return base


def get(name: str) -> Policy:
    """The record of ``name``; a CurriculumError naming the choices for an unknown one."""
    for p in REGISTRY:
        if p.name == name:
            return p
    raise CurriculumError(f"--policy {name!r}: expected one of {', '.join(names())} or all")


def run_order(asked: Iterable[str]) -> tuple[Policy, ...]:
    """The baseline, then the ``asked`` policies in registry order (each once)."""
    wanted = {get(name).name for name in asked}
    return (baseline(), *(p for p in REGISTRY if p.name in wanted and not p.baseline))


def allowed(constructions: Iterable[str], staged: bool = True) -> tuple[str, ...]:
    """The policies a study whose cells have these ``construction`` values can make (without
    ``staged``, less the staged ones: their predictions are another policy's)."""
    have = set(constructions)
    return tuple(p.name for p in REGISTRY if p.needs <= have and (staged or not p.staged))


def help_text() -> str:
    """``--policy``'s help: every policy, what it does, the baseline always made."""
    return "comma-separated, or all: " + "; ".join(map(_described, REGISTRY))


def _described(p: Policy) -> str:
    said = [p.summary]
    said += ["the baseline, always made"] if p.baseline else []
    said += [] if p.equal_budget else ["ignores the budget"]
    said += [f"needs {c} cells" for c in sorted(p.needs)]
    return f"{p.name} ({', '.join(said)})"
