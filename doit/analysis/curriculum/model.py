"""The fitted response the curve policies optimise: each ability's score at any allocation, with
the transfer term from the leave-one-ability-out cells, and its bootstrap replicates.

For K abilities and an allocation n (items per ability), ability a scores

    S_a(n) = c_a + (1 - T_a) [U_a(n_a) - c_a] + T_a [U_a(N_other / (K - 1)) - c_a]
           =       f_a(n_a)                   +       g_a(N_other)

U_a: the fitted uniform-grid curve of the target base (`doit.analysis.fits`; U_a(0) is the
curve's floor: the base's untuned score where it has an n = 0 cell), c_a the chance score,
N_other = sum of the other abilities' items, T_a one parameter per ability: the
share of the uniform gain an ability keeps without its own data. The form is exact at the cells
it is fitted on: a uniform cell (n_a = N_other / (K - 1) = n) scores U_a(n), a leave-one-out cell
(n_a = 0) scores c_a + T_a [U_a(n) - c_a] when U_a(0) = c_a. T_a is `doit.analysis.features`' Transference:
sum(L - c) / sum(U - c) over the (base, n) pairs with a uniform cell and the cell without a
(``features.loo_sums``), each replicate its own ratio (clipped to [-1, 2]). T_a = 0 (transfer
ignored, said in ``Transfer.note``) when the study has no cell without a, or when the uniform
gain's 95% CI includes 0 (no gain to share). With a fixed item budget B, N_other = B - n_a, so
the objective is separable in n_a (`optimise.maximise` solves it exactly).
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


def transfer_shares(counts, abilities, use: bool) -> dict[str, Transfer]:
    """T_a for every ability from ``counts``' leave-one-out cells (``use`` False: all 0)."""
    out = {}
    for a in abilities:
        if not use:
            out[a] = Transfer(0.0, None, 0, "transfer off")
            continue
        sums = loo_sums(counts, a)
        pairs, gain, kept = sums.pairs, sums.gain.point, sums.kept.point
        if pairs == 0:
            out[a] = Transfer(0.0, None, 0, "no leave-one-out cell without it: transfer ignored")
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

    @property
    def label(self) -> str:
        return "curves with transfer" if self.uses_transfer else "curves"

    @property
    def uses_transfer(self) -> bool:
        return any(t.share != 0 for t in self.transfer.values())

    def values(self, a: str, n: np.ndarray, total: float) -> np.ndarray:
        """S_a's point estimate when a gets ``n`` items (array) of ``total`` items in all."""
        k = len(self.abilities)
        t, c, fit = self.transfer[a].share, self.chance(a), self.curves[a]
        own = point_curve(fit, n) - c
        if t == 0:
            return c + own
        other = point_curve(fit, np.maximum(total - n, 0) / max(k - 1, 1)) - c
        return c + (1 - t) * own + t * other

    def predict(self, counts: dict[str, int]) -> tuple[np.ndarray, np.ndarray | None]:
        """(K,) point scores and (R, K) replicates of the allocation ``counts``."""
        total = sum(counts.values())
        k = len(self.abilities)
        points, reps = [], []
        for a in self.abilities:
            n = counts.get(a, 0)
            x = np.array([n, max(total - n, 0) / max(k - 1, 1)], float)
            points.append(float(self.values(a, np.array([n], float), total)[0]))
            rc = replicate_curve(self.curves[a], x)
            if rc is None:
                reps = None
                continue
            tr = self.transfer[a]
            t = tr.reps if tr.reps is not None else np.full(len(rc), tr.share)
            c = self.chance(a)
            if reps is not None:
                reps.append(c + (1 - t) * (rc[:, 0] - c) + t * (rc[:, 1] - c))
        return np.array(points), (np.column_stack(reps) if reps else None)
