"""The fitted response the curve policies optimise: each ability's score at any allocation, with
the transfer term from the leave-one-ability-out cells, and its bootstrap replicates.

For K abilities and an allocation n (items per ability), ability a scores

    S_a(n) = f_a + (1 - T_a) [U_a(n_a) - f_a] + T_a [U_a(N_other / (K - 1)) - f_a]
           =       f_a(n_a)                   +       g_a(N_other)

U_a: the fitted uniform-grid curve of the target base (`doit.analysis.fits`, anchored: U_a(0) =
f_a is the curve's floor, the target base's own untuned score where it has an n = 0 cell, a
curve that may fall), N_other = sum of the other abilities' items, T_a one parameter per
ability: the share of its uniform gain over the untuned base that an ability keeps without its
own data. The form is exact at the cells it is fitted on: a uniform cell (n_a = N_other / (K -
1) = n) scores U_a(n), a leave-one-out cell (n_a = 0) f_a + T_a [U_a(n) - f_a]. T_a is
`doit.analysis.features.loo_sums` anchored on the untuned base: sum(L - f) / sum(U - f) over
the (base, n) pairs of the target base (or the base ``--transfer-from`` names) with a uniform
cell, the cell without a and an untuned cell; each replicate its own ratio (clipped to
``T_RANGE``). Against chance instead (before #32) a base that starts above chance counted its
head start as gain kept without own data (code's untuned 68%). T_a = 0 (transfer ignored,
said in ``Transfer.note``) when there is no such pair, or when the uniform gain's 95% CI
includes 0 (no gain to share). With a fixed item budget B, N_other = B - n_a, so the objective
is separable in n_a (`optimise.maximise` solves it exactly); ``ScoreModel.spread`` gives the
replicates' SD of S_a at every count, the risk term of the objective.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from doit.analysis.bootstrap import interval
from doit.analysis.features import loo_sums
from doit.analysis.fits import SeriesFit, probability

T_RANGE = (-1.0, 2.0)  # a replicate's share is clipped here (its gain may come near 0)


@dataclass
class Transfer:
    """One ability's T_a: point, replicates (R,) or None, the pairs it rests on, and a note
    when it is set to 0 (ignored)."""

    share: float
    reps: np.ndarray | None
    pairs: int
    note: str = ""

    @property
    def ci(self) -> tuple[float, float]:
        return interval(self.share, self.reps) if self.reps is not None else (np.nan, np.nan)


def transfer_shares(counts, abilities, use: bool, bases=None) -> dict[str, Transfer]:
    """T_a for every ability from ``counts``' leave-one-out cells on ``bases`` (None: every
    base), anchored on each base's untuned score (``use`` False: all 0)."""
    out = {}
    for a in abilities:
        if not use:
            out[a] = Transfer(0.0, None, 0, "transfer off")
            continue
        sums = loo_sums(counts, a, bases=bases, anchored=True)
        pairs, gain, kept = sums.pairs, sums.gain.point, sums.kept.point
        if pairs == 0:
            out[a] = Transfer(
                0.0, None, 0, "no leave-one-out cell without it beside an untuned cell: ignored"
            )
            continue
        lo, hi = sums.gain.interval()
        if not lo > 0 and not hi < 0:
            out[a] = Transfer(
                0.0, None, pairs, "its uniform gain's CI includes 0: transfer ignored"
            )
            continue
        with np.errstate(divide="ignore", invalid="ignore"):
            reps = np.clip(np.nan_to_num(sums.kept.reps / sums.gain.reps, nan=0.0), *T_RANGE)
        out[a] = Transfer(float(np.clip(kept / gain, *T_RANGE)), reps, pairs)
    return out


def point_curve(fit: SeriesFit, n) -> np.ndarray:
    """The fitted curve's point estimate (0-100) at ``n`` (its floor at n = 0), without
    replicates."""
    n = np.asarray(n, float)
    safe = np.where(n > 0, n, 1.0)
    p = probability(fit.chosen, fit.theta[fit.chosen][None], fit.to_t(safe)[None])[0]
    return np.where(n > 0, 100 * p, fit.floor()[0])


def replicate_curve(fit: SeriesFit, n) -> np.ndarray | None:
    """(R, len n) replicate curves (0-100), each replicate's floor at n = 0; None without
    replicates."""
    n = np.asarray(n, float)
    _, reps = fit.curve(np.where(n > 0, n, 1.0))
    if reps is None:
        return None
    return np.where(n[None] > 0, reps, fit.floor()[1][:, None])


@dataclass
class ScoreModel:
    """S_a(n) for the abilities of ``curves`` (module docstring); ``grid_min``, ``grid_max``:
    the smallest and largest n of the fitted cells (outside them a count is extrapolated)."""

    abilities: tuple[str, ...]
    curves: dict[str, SeriesFit]
    transfer: dict[str, Transfer]
    grid_max: float
    grid_min: float = 1.0

    def extrapolated(self, a: str, n: float) -> bool:
        return bool(n > self.grid_max or 0 < n < self.grid_min)

    def chance(self, a: str) -> float:
        return 100 * self.curves[a].chance

    def start(self, a: str) -> float:
        """f_a: the curve's score at n = 0 (the target's untuned score where it has one)."""
        return float(self.curves[a].floor()[0])

    @property
    def label(self) -> str:
        return "curves with transfer" if self.uses_transfer else "curves"

    @property
    def uses_transfer(self) -> bool:
        return any(t.share != 0 for t in self.transfer.values())

    def values(self, a: str, n: np.ndarray, total: float) -> np.ndarray:
        """S_a's point estimate when a gets ``n`` items (array) of ``total`` items in all."""
        k = len(self.abilities)
        t, f, fit = self.transfer[a].share, self.start(a), self.curves[a]
        own = point_curve(fit, n) - f
        if t == 0:
            return f + own
        other = point_curve(fit, np.maximum(total - n, 0) / max(k - 1, 1)) - f
        return f + (1 - t) * own + t * other

    def replicates(self, a: str, n: np.ndarray, total: float) -> np.ndarray | None:
        """(R, len n) replicates of S_a when a gets ``n`` items of ``total``; None without."""
        k, fit = len(self.abilities), self.curves[a]
        n = np.asarray(n, float)
        own = replicate_curve(fit, n)
        if own is None:
            return None
        f = fit.floor()[1][:, None]
        tr = self.transfer[a]
        if tr.share == 0:
            return own
        t = (tr.reps if tr.reps is not None else np.full(len(own), tr.share))[:, None]
        other = replicate_curve(fit, np.maximum(total - n, 0) / max(k - 1, 1))
        return f + (1 - t) * (own - f) + t * (other - f)

    def spread(self, a: str, n: np.ndarray, total: float) -> np.ndarray:
        """The replicates' SD of S_a at each count of ``n`` (0 without replicates)."""
        reps = self.replicates(a, n, total)
        return np.zeros(len(np.atleast_1d(n))) if reps is None else reps.std(0, ddof=1)

    def predict(self, counts: dict[str, int]) -> tuple[np.ndarray, np.ndarray | None]:
        """(K,) point scores and (R, K) replicates of the allocation ``counts``."""
        total = sum(counts.values())
        points, reps = [], []
        for a in self.abilities:
            n = np.array([counts.get(a, 0)], float)
            points.append(float(self.values(a, n, total)[0]))
            r = self.replicates(a, n, total)
            reps = None if r is None or reps is None else [*reps, r[:, 0]]
        return np.array(points), (np.column_stack(reps) if reps else None)
