"""The study runner: a scaling grid (`recipes/grids/*.yaml`) planned into cells, run resumably,
and gathered into one results table (`read_results`, the analysis's input) and, for its
pretraining cells, one pretraining table (`read_pretraining`). See README.md.

This module is the grid's public face for the layers above it (`doit.analysis`, which
tests/test_import_graph.py holds to it and to two contract modules: `doit.grid.results`, the
results table, and `doit.grid.plan`, the typed plan): the tables' readers, re-scoring stored
predictions (`rescore`), training mix files on a study's base (`train_mixes`) and the integer
counts of a mixture (`mix_counts`)."""

from doit.grid.mix_study import (
    MixStudyError,
    Reusable,
    TrainedMixes,
    mix_grid,
    reusable_cells,
    train_mixes,
)
from doit.grid.pretraining import PretrainingError, read_pretraining
from doit.grid.random_mixes import counts as mix_counts
from doit.grid.rescoring import rescore
from doit.grid.results import ResultsError, read_results

__all__ = [
    "MixStudyError",
    "PretrainingError",
    "ResultsError",
    "Reusable",
    "TrainedMixes",
    "mix_counts",
    "mix_grid",
    "read_pretraining",
    "read_results",
    "rescore",
    "reusable_cells",
    "train_mixes",
]
