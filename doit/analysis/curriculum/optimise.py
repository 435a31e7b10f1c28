"""Exact integer allocation: maximise a separable objective sum_a v_a(x_a) over integer counts.

A fitted curve need not be concave (a logistic in log n is convex at small n), so a greedy
step that assumes diminishing returns can stop short of the optimum. ``maximise`` is dynamic
programming over the budget: after the first j abilities, ``best[b]`` is the largest objective
any counts of theirs costing exactly b reach; adding ability j+1 is a (max, +) convolution of
``best`` with its values, computed in blocks as a (budget x counts) array. The cost is
O(K x budget x counts) array operations, about a second for ten abilities at a budget of
10,000 items. Ties go to fewer items for the earlier abilities (registry order).

``costs``: the cost of each count (integer units, non-decreasing); by default a count costs
itself (items), and the counts must then spend the budget exactly; with costs (tokens, in
quanta) they spend at most the budget.
"""

from __future__ import annotations

import numpy as np

BLOCK = 4_000_000  # array elements per block of the convolution


class Infeasible(ValueError):
    """No counts within their bounds spend the budget."""


def maximise(
    values: list[np.ndarray],
    budget: int,
    costs: list[np.ndarray] | None = None,
    exact: bool | None = None,
) -> list[int]:
    """The counts x_a (indices into ``values[a]``) maximising sum_a values[a][x_a] subject to
    sum_a cost_a(x_a) == budget (items; ``exact``) or <= budget (``costs`` given)."""
    exact = costs is None if exact is None else exact
    if costs is None and exact and all(map(concave, values)):
        return _greedy(values, budget)
    costs = costs or [np.arange(len(v)) for v in values]
    tables = [
        _by_cost(np.asarray(v, float), np.asarray(c, int), budget) for v, c in zip(values, costs)
    ]
    reach_after = np.cumsum([len(t[0]) - 1 for t in tables])  # the most the first j can cost
    best = np.full(budget + 1, -np.inf)
    best[0] = 0.0
    choices = []
    for j, (by_cost, count_at) in enumerate(tables):
        rest = int(reach_after[-1] - reach_after[j])  # what the later abilities can still take
        lo = max(0, budget - rest) if exact else 0
        hi = min(budget, int(reach_after[j]))
        best, arg = _convolve(best, by_cost, lo, hi)
        choices.append((arg, count_at))
    end = budget if exact else int(np.argmax(best))
    if not np.isfinite(best[end]):
        raise Infeasible(f"no counts within their bounds spend a budget of {budget}")
    out = []
    for arg, count_at in reversed(choices):
        c = int(arg[end])
        out.append(int(count_at[c]))
        end -= c
    return out[::-1]


def concave(v) -> bool:
    """Whether ``v`` has non-increasing steps (up to rounding): then greedy is exact."""
    v = np.asarray(v, float)
    if len(v) < 3:
        return bool(np.isfinite(v).all())
    tol = 1e-12 * max(1.0, float(np.abs(v).max()))
    return bool(np.isfinite(v).all() and (np.diff(v, 2) <= tol).all())


def _greedy(values: list[np.ndarray], budget: int) -> list[int]:
    """Exact for concave values: the ``budget`` largest steps of all abilities (each ability's
    steps are non-increasing, so the largest are a prefix of its steps; ties go to the earlier
    ability, then to the earlier step)."""
    steps = [np.diff(np.asarray(v, float)) for v in values]
    if budget > sum(len(s) for s in steps) or budget < 0:
        raise Infeasible(f"no counts within their bounds spend a budget of {budget}")
    gains = np.concatenate(steps)
    owner = np.concatenate([np.full(len(s), a) for a, s in enumerate(steps)]).astype(int)
    order = np.argsort(-gains, kind="stable")[:budget]
    return [int(x) for x in np.bincount(owner[order], minlength=len(values))]


def _by_cost(v: np.ndarray, cost: np.ndarray, budget: int):
    """Per cost c (0..max cost within the budget): the best value of a count costing c and that
    count (the smallest on ties); -inf where no count costs c."""
    v = np.where(np.isnan(v), -np.inf, v)
    keep = cost <= budget
    v, cost, count = v[keep], cost[keep], np.nonzero(keep)[0]
    if not len(cost):  # every count costs more than the budget
        return np.array([-np.inf]), np.zeros(1, int)
    size = int(cost.max()) + 1
    order = np.lexsort((count, -v, cost))  # by cost, then best value, then fewest items
    first = order[np.r_[True, cost[order][1:] != cost[order][:-1]]]
    by_cost = np.full(size, -np.inf)
    count_at = np.zeros(size, int)
    by_cost[cost[first]] = v[first]
    count_at[cost[first]] = count[first]
    return by_cost, count_at


def _convolve(best: np.ndarray, v: np.ndarray, lo: int, hi: int):
    """new[b] = max_c best[b - c] + v[c] for lo <= b <= hi (-inf elsewhere) and the c reaching
    it (the smallest on ties). Row i of a sliding window over ``best`` reversed holds
    best[b - c] for c = 0, 1, ... (b = len - 1 - i), so no copy of ``best`` is made."""
    size, width = len(best), len(v)
    flipped = np.concatenate([best[::-1], np.full(width - 1, -np.inf)])
    windows = np.lib.stride_tricks.sliding_window_view(flipped, width)
    new = np.full(size, -np.inf)
    arg = np.zeros(size, int)
    step = max(1, BLOCK // width)
    for top in range(hi, lo - 1, -step):  # b from hi down, a block of rows at a time
        b = np.arange(top, max(top - step, lo - 1), -1)
        cand = windows[size - 1 - top : size - 1 - top + len(b)] + v
        c = np.argmax(cand, axis=1)
        new[b] = cand[np.arange(len(b)), c]
        arg[b] = c
    return new, arg
