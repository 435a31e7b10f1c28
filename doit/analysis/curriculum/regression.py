"""The ``regression`` policy (RegMix, Liu et al. 2025): each ability's validation score regressed
on the mixture, then the best mixture at the budget.

Data (``mix_points``): every trained cell of the target base whose items per ability are known
(the results' ``n_own``; uniform and leave-one-out cells from their n): the grid's random
mixtures (`doit.grid.random_mixes`), and the uniform and leave-one-out cells beside them (a
study has tens of cells, not RegMix's 512 proxies, so none is left out). Features: log(1 + n_b)
for every ability b. Models: ``linear`` (least squares per ability with a whisper of ridge,
11 coefficients for 10 abilities) and ``lightgbm`` (gradient-boosted trees per ability, as RegMix
uses; the optional extra ``doit-scaling[mixing]``), compared by k-fold cross-validated RMSE
(``auto``), each reported with its cross-validated Spearman correlation per ability.

Search: the linear law's weighted macro is sum_b gamma_b log(1 + n_b), separable, so
`optimise.maximise` finds its exact optimum at the budget; the trees' is not, so their optimum
is RegMix's: the mean of the top 100 of 20,000 mixtures drawn around the pool prior. Every
replicate of the analysis's bootstrap refits the model (the linear one at once, the trees on the
first ``TREE_REPLICATES``), so predictions carry CIs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from doit.analysis.curriculum.options import CurriculumError

RIDGE = 1e-6
FOLDS = 5
TREE_REPLICATES = 50
SEARCH, TOP = 20_000, 100
MISSING_LIGHTGBM = (
    "lightgbm is not installed: install the extra (pip install -e '.[mixing]'; "
    "make installs it) or use --model linear"
)


@dataclass
class MixPoints:
    """The regression's data: ``X`` (P, K) items per ability, ``y`` (P, K) scores (0-100),
    ``y_reps`` (R, P, K) or None, ``mixes``: how many points are mix cells."""

    abilities: tuple[str, ...]
    X: np.ndarray
    y: np.ndarray
    y_reps: np.ndarray | None
    mixes: int
    labels: list[str] = field(default_factory=list)


def features(X: np.ndarray) -> np.ndarray:
    return np.column_stack([np.ones(len(X)), np.log1p(np.asarray(X, float))])


class Linear:
    name = "linear"

    def fit(self, X, Y):
        F = features(X)
        gram = F.T @ F + RIDGE * len(F) * np.eye(F.shape[1])
        self.solve = np.linalg.solve(gram, F.T)  # (P+1, points): beta = solve @ Y
        self.beta = self.solve @ Y
        return self

    def predict(self, X) -> np.ndarray:
        return features(X) @ self.beta

    def replicate_betas(self, Y_reps) -> np.ndarray:
        """(R, K+1, K) coefficients of every replicate (the same design, so one solve)."""
        return np.einsum("fp,rpk->rfk", self.solve, Y_reps)


def lightgbm_module():
    try:
        import lightgbm
    except ImportError:
        return None
    return lightgbm


class Trees:
    name = "lightgbm"

    def __init__(self, seed: int = 0):
        self.seed = seed

    def fit(self, X, Y):
        lgb = lightgbm_module()
        if lgb is None:
            raise CurriculumError(MISSING_LIGHTGBM)
        F = np.log1p(np.asarray(X, float))
        self.models = [
            lgb.LGBMRegressor(
                n_estimators=200,
                learning_rate=0.05,
                num_leaves=7,
                min_child_samples=3,
                random_state=self.seed,
                n_jobs=1,
                verbose=-1,
            ).fit(F, Y[:, k])
            for k in range(Y.shape[1])
        ]
        return self

    def predict(self, X) -> np.ndarray:
        F = np.log1p(np.atleast_2d(np.asarray(X, float)))
        return np.column_stack([m.predict(F) for m in self.models])


def cross_validate(make, points: MixPoints, seed: int) -> pd.DataFrame:
    """Per ability: k-fold cross-validated Spearman correlation and RMSE of ``make()``'s model."""
    n = len(points.X)
    folds = np.random.default_rng(seed).permutation(n) % min(FOLDS, n)
    pred = np.zeros_like(points.y)
    for f in np.unique(folds):
        train, test = folds != f, folds == f
        pred[test] = make().fit(points.X[train], points.y[train]).predict(points.X[test])
    rows = []
    for k, a in enumerate(points.abilities):
        obs, got = points.y[:, k], pred[:, k]
        rho = spearmanr(obs, got).statistic if np.ptp(obs) > 0 and np.ptp(got) > 0 else np.nan
        rows.append(
            {
                "ability": a,
                "model": make().name,
                "cv_spearman": float(rho),
                "cv_rmse": float(np.sqrt(np.mean((obs - got) ** 2))),
                "points": n,
                "mix_cells": points.mixes,
            }
        )
    return pd.DataFrame(rows)


@dataclass
class RegressionModel:
    """The chosen fitted model; ``predict`` gives (K,) points and (R, K) replicates."""

    abilities: tuple[str, ...]
    model: object
    reps: list | np.ndarray | None  # linear: (R, K+1, K) betas; trees: fitted replicate models
    cv: pd.DataFrame
    observed_max: dict[str, float]  # the most items of each ability any point had

    def extrapolated(self, a: str, n: float) -> bool:
        return bool(n > self.observed_max[a])

    @property
    def kind(self) -> str:
        return self.model.name

    @property
    def label(self) -> str:
        return f"regression ({self.kind})"

    def predict(self, counts: dict[str, int]) -> tuple[np.ndarray, np.ndarray | None]:
        x = np.array([[counts.get(a, 0) for a in self.abilities]], float)
        point = np.clip(self.model.predict(x)[0], 0, 100)  # a linear law knows no bounds
        if self.reps is None:
            return point, None
        if isinstance(self.reps, np.ndarray):
            reps = np.einsum("f,rfk->rk", features(x)[0], self.reps)
        else:
            reps = np.vstack([m.predict(x)[0] for m in self.reps])
        return point, np.clip(reps, 0, 100)

    def gammas(self, weights: np.ndarray) -> np.ndarray:
        """The linear law's weighted-macro coefficient of log(1 + n_b), per ability b."""
        return self.model.beta[1:] @ (weights / weights.sum())


def fit(points: MixPoints, kind: str, seed: int = 0) -> RegressionModel:
    """The regression of ``kind`` (auto: the lower mean cross-validated RMSE of the models
    installed), refitted on every replicate."""
    makers = {"linear": Linear, "lightgbm": lambda: Trees(seed)}
    if kind == "lightgbm" and lightgbm_module() is None:
        raise CurriculumError(MISSING_LIGHTGBM)
    names = [kind] if kind != "auto" else ["linear"] + (["lightgbm"] if lightgbm_module() else [])
    cv = pd.concat([cross_validate(makers[k], points, seed) for k in names], ignore_index=True)
    chosen = min(names, key=lambda k: cv.loc[cv["model"] == k, "cv_rmse"].mean())
    cv["chosen"] = cv["model"] == chosen
    model = makers[chosen]().fit(points.X, points.y)
    reps = None
    if points.y_reps is not None:
        if chosen == "linear":
            reps = model.replicate_betas(points.y_reps)
        else:
            reps = [Trees(seed).fit(points.X, r) for r in points.y_reps[:TREE_REPLICATES]]
    top = dict(zip(points.abilities, points.X.max(0)))
    return RegressionModel(points.abilities, model, reps, cv, top)
