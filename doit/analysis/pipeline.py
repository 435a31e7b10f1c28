"""The whole analysis in memory: read, select, bootstrap, fit, sensitivities, features,
predictions; each CLI subcommand writes the pieces it names from one ``Analysis``."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pandas as pd

from doit.analysis import features as feat
from doit.analysis import formulation as form
from doit.analysis import limits
from doit.analysis.bootstrap import bootstrap_counts
from doit.analysis.fits import fit_grid, fits_table
from doit.analysis.predict import predictions, summary
from doit.analysis.select import select_checkpoints
from doit.analysis.sensitivity import DELTA, sensitivities
from doit.data import abilities as ab
from doit.grid.results import read_results
from doit.io import read_json


@dataclass
class Analysis:
    source: str
    rule: str = "study"
    replicates: int = 1000
    delta: float = DELTA
    seed: int = 0
    features_csv: str | None = None  # precomputed feature columns (pluggable)
    complexity: pd.DataFrame | None = None  # from `features --base --data`
    ground_truth: dict | None = None  # a micro corpus's ground_truth.json
    notes: list[str] = field(default_factory=list)
    split: str = "test"  # the split the fits are made on (valid: only under the rule `last`)
    formulation: str = form.MAX  # which scoring of a checkpoint is read (doit.analysis.formulation)
    cell_formulation: str | None = None  # the cells trained in it; None: the table's only one

    @cached_property
    def all_rows(self) -> pd.DataFrame:
        """The results table as read (abilities the registry does not know left out, said in
        the notes), every formulation a checkpoint was scored in."""
        table = read_results(self.source)
        check_scale(table, self.source)
        unknown = unknown_abilities(table)
        if unknown:
            self.notes.append(
                f"Abilities not in the ability registry, left out: "
                f"{', '.join(unknown)} (doit.data.abilities lists the known keys)."
            )
            table = table[~table["ability"].isin(unknown)].reset_index(drop=True)
        return table

    @cached_property
    def _chosen(self):
        return form.choose(self.all_rows, self._all_items, self.formulation, self.cell_formulation)

    @cached_property
    def table(self) -> pd.DataFrame:
        """One row per (cell, epoch, split, ability): the formulation rule's."""
        return self._chosen[0]

    @cached_property
    def items(self) -> pd.DataFrame | None:
        return self._chosen[1]

    @cached_property
    def _all_items(self) -> pd.DataFrame | None:
        path = Path(self.source)
        if path.is_dir() and any((path / "items").glob("*.parquet")):
            return read_results(path, per_item=True)
        sibling = path.with_name(path.stem + ".items" + path.suffix)  # results.items.parquet
        return (
            read_results(sibling, per_item=True) if path.is_file() and sibling.is_file() else None
        )

    @cached_property
    def analysed_rows(self) -> pd.DataFrame:
        """Every scoring of the cells analysed (those trained in ``cell_formulation``)."""
        rows = self.all_rows
        return (
            rows
            if self.cell_formulation is None
            else rows[rows["cell_formulation"] == self.cell_formulation]
        )

    @cached_property
    def formulations(self) -> pd.DataFrame:
        """Each formulation's score and the max, where checkpoints were scored in several."""
        return form.comparison(self.analysed_rows)

    @cached_property
    def selected(self) -> pd.DataFrame:
        splits = None if self.split == "test" else (self.split,)  # test: benchmarks reported too
        return select_checkpoints(self.table, self.rule, splits)

    @cached_property
    def counts(self):
        return bootstrap_counts(
            self.selected, self.items, self.replicates, self.seed, splits=(self.split,)
        )

    @cached_property
    def grid(self):
        return fit_grid(self.counts)

    @cached_property
    def fits(self) -> pd.DataFrame:
        return fits_table(self.grid).assign(rule=self.rule, uncertainty=self.counts.method)

    @cached_property
    def _sens(self):
        abilities = self.counts.points["ability"].unique()
        return sensitivities(self.grid, self.delta, abilities, limits.shape(self.counts.points))

    @property
    def sensitivity(self) -> pd.DataFrame:
        return self._sens[0].assign(rule=self.rule, delta=self.delta)

    @cached_property
    def limits(self) -> list[str]:
        """What this study's shape or data could not give, in sentences (report, CLI)."""
        return [*self.notes, *limits.study_notes(self)]

    @cached_property
    def predictions(self) -> pd.DataFrame:
        return predictions(self.counts, self.seed).assign(rule=self.rule)

    @property
    def prediction_summary(self) -> pd.DataFrame:
        return summary(self.predictions)

    @cached_property
    def features(self) -> pd.DataFrame:
        out = feat.transference(self.counts)
        for extra in (self.complexity, self.extra_features):
            if extra is not None:
                cols = [c for c in extra.columns if c == "ability" or c not in out.columns]
                out = out.merge(extra[cols], on="ability", how="left")
        if "complexity" not in out:
            out["complexity"] = float("nan")
        return out.assign(rule=self.rule)

    @cached_property
    def extra_features(self) -> pd.DataFrame | None:
        """The ``features_csv`` columns, checked (`read_features`)."""
        return read_features(self.features_csv) if self.features_csv else None

    @cached_property
    def explain(self) -> pd.DataFrame:
        return feat.explain(self._sens[0], self._sens[1], self.features, seed=self.seed)

    @cached_property
    def planted(self) -> pd.DataFrame | None:
        if not self.ground_truth:
            return None
        measured = self.features.merge(self._sens[0], on="ability", how="left")
        return feat.planted_correlations(measured, self.ground_truth)


SCORED_SPLITS = ("valid", "test")  # the splits whose abilities are the registry's


def unknown_abilities(table: pd.DataFrame) -> list[str]:
    """Abilities of the valid/test rows that the registry does not know (benchmark splits
    carry their benchmark's name and are left alone)."""
    rows = table[table["split"].isin(SCORED_SPLITS)]
    known = {a.key for a in ab.ALL}
    return sorted(set(rows["ability"].dropna().astype(str)) - known)


def check_scale(table: pd.DataFrame, source: str) -> None:
    """Refuse scores on a 0-1 scale: every score <= 1 while chance is in points."""
    scores, chance = table["score"].dropna(), table["chance"].dropna()
    if len(scores) and scores.max() <= 1 and len(chance) and chance.max() > 1:
        raise ValueError(
            f"{source}: score: every score is <= 1 while chance is in points (up "
            f"to {chance.max():g}): the table is on a 0-1 scale; scores are 0-100"
        )


def read_features(path) -> pd.DataFrame:
    """A CSV of extra per-ability features: an ``ability`` column of registry keys and numeric
    columns; anything else is a ValueError naming ``path:line: column``."""
    from doit.grid.results import ResultsError, read_csv

    table = read_csv(path)
    if "ability" not in table.columns:
        raise ResultsError(f"{path}: no 'ability' column (one row per ability, keyed by it)")
    known = {a.key for a in ab.ALL}
    for i, key in enumerate(table["ability"]):
        if key not in known:
            raise ResultsError(f"{path}:{i + 2}: ability: {key!r} is not in the ability registry")
    for column in (c for c in table.columns if c != "ability"):
        numbers = pd.to_numeric(table[column], errors="coerce")
        bad = numbers.isna() & table[column].notna()
        if bad.any():
            i = int(bad.to_numpy().nonzero()[0][0])
            raise ResultsError(
                f"{path}:{i + 2}: {column}: {table[column].iloc[i]!r} is not a number"
            )
        table[column] = numbers
    return table


def load_truth(data_dir) -> dict | None:
    path = Path(data_dir) / "ground_truth.json" if data_dir else None
    return read_json(path) if path and path.is_file() else None
