"""The whole analysis in memory: read, select, bootstrap, fit, sensitivities, features,
predictions; each CLI subcommand writes the pieces it names from one ``Analysis``."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from doit.analysis import features as feat
from doit.analysis import formulation as form
from doit.analysis import limits
from doit.analysis.bootstrap import bootstrap_counts
from doit.analysis.fits import fit_grid, fits_table
from doit.analysis.predict import predictions, summary
from doit.analysis.select import select_checkpoints
from doit.analysis.sensitivity import sensitivities as measure_sensitivities
from doit.analysis.settings import Settings
from doit.analysis.study import StudyRows, read_study
from doit.data import abilities as ab
from doit.io import read_json


class Sensitivities(NamedTuple):
    table: pd.DataFrame  # sensitivity.csv's rows (without rule and delta)
    replicates: dict  # the bootstrap replicates of each sensitivity (features.explain)


@dataclass(frozen=True, eq=False)
class Analysis:
    """The analysis of the study (folder or table) at ``source`` under ``settings``; inputs
    are fixed at construction, every result is computed once, when first read."""

    source: str
    settings: Settings = Settings()
    features_csv: str | None = None  # precomputed feature columns (pluggable)
    complexity: pd.DataFrame | None = None  # from `features --base --data`
    ground_truth: dict | None = None  # a micro corpus's ground_truth.json
    study: StudyRows | None = None  # the study as already read (so it is read once), or None

    @cached_property
    def rows(self) -> StudyRows:
        """The study as the one reader reads it (`doit.analysis.study.read_study`)."""
        if self.study is not None:
            return self.study
        s = self.settings
        return read_study(
            self.source, s.formulation, s.cell_formulation, s.formulation_split, s.bases
        )

    @property
    def all_rows(self) -> pd.DataFrame:
        """The results table as read (abilities the registry does not know left out, said in
        the notes), every formulation a checkpoint was scored in."""
        return self.rows.all_rows

    @property
    def table(self) -> pd.DataFrame:
        """One row per (cell, epoch, split, ability): the formulation rule's."""
        return self.rows.table

    @property
    def items(self) -> pd.DataFrame | None:
        return self.rows.items

    @property
    def notes(self) -> list[str]:
        """What the reader left out, in sentences."""
        return list(self.rows.notes)

    @cached_property
    def analysed_rows(self) -> pd.DataFrame:
        """Every scoring of the cells analysed (those trained in ``cell_formulation``)."""
        rows, cells = self.all_rows, self.settings.cell_formulation
        return rows if cells is None else rows[rows["cell_formulation"] == cells]

    @cached_property
    def formulations(self) -> pd.DataFrame:
        """Each formulation's score and the max, where checkpoints were scored in several."""
        return form.comparison(self.analysed_rows)

    @cached_property
    def selected(self) -> pd.DataFrame:
        split = self.settings.split
        splits = None if split == "test" else (split,)  # test: benchmarks reported too
        return select_checkpoints(self.table, self.settings.rule, splits)

    @cached_property
    def counts(self):
        s = self.settings
        return bootstrap_counts(
            self.selected, self.items, s.replicates, s.seed, (s.split,), s.seed_sd, s.seed_corr
        )

    @cached_property
    def curves(self):
        """Every fitted data and size curve (`fits.GridFits`)."""
        return fit_grid(self.counts)

    @cached_property
    def fits(self) -> pd.DataFrame:
        table = fits_table(self.curves).assign(
            rule=self.settings.rule, uncertainty=self.counts.method
        )
        return self.stated(table)

    @cached_property
    def sensitivities(self) -> Sensitivities:
        abilities = self.counts.points["ability"].unique()
        shape = limits.shape(self.counts.points)
        return Sensitivities(
            *measure_sensitivities(self.curves, self.settings.delta, abilities, shape)
        )

    @property
    def sensitivity(self) -> pd.DataFrame:
        s = self.settings
        seeds = self.counts.seed_table.drop(columns="resamples")
        table = self.sensitivities.table.merge(seeds, on="ability", how="left")
        return self.stated(table.assign(rule=s.rule, delta=s.delta))

    @cached_property
    def limits(self) -> list[str]:
        """What this study's shape or data could not give, in sentences (report, CLI)."""
        return [*self.notes, *limits.study_notes(self)]

    @cached_property
    def predictions(self) -> pd.DataFrame:
        table = predictions(self.counts, self.settings.seed).assign(rule=self.settings.rule)
        return self.stated(table)

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
        return self.stated(out.assign(rule=self.settings.rule))

    @cached_property
    def extra_features(self) -> pd.DataFrame | None:
        """The ``features_csv`` columns, checked (`read_features`)."""
        return read_features(self.features_csv) if self.features_csv else None

    @cached_property
    def explain(self) -> pd.DataFrame:
        sens = self.sensitivities
        table = feat.explain(sens.table, sens.replicates, self.features, seed=self.settings.seed)
        return table.assign(resamples=self.counts.resamples)

    def stated(self, table: pd.DataFrame) -> pd.DataFrame:
        """``table`` with a ``resamples`` column: what its intervals resample, per ability
        (``Counts.resamples``'s phrase where a row has no ability of its own)."""
        said = self.counts.seed_table.set_index("ability")["resamples"]
        rows = (
            table["ability"].map(said)
            if "ability" in table
            else pd.Series(None, table.index, object)
        )
        return table.assign(resamples=rows.fillna(self.counts.resamples).astype(object))

    @cached_property
    def planted(self) -> pd.DataFrame | None:
        if not self.ground_truth:
            return None
        measured = self.features.merge(self.sensitivities.table, on="ability", how="left")
        return feat.planted_correlations(measured, self.ground_truth, self.sensitivities.replicates)


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
