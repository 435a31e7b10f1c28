"""The study runner: a scaling grid (`recipes/grids/*.yaml`) planned into cells, run resumably,
and gathered into one results table (`read_results`, the analysis's input) and, for its
pretraining cells, one pretraining table (`read_pretraining`). See README.md."""

from doit.grid.pretraining import PretrainingError, read_pretraining
from doit.grid.results import ResultsError, read_results

__all__ = ["PretrainingError", "ResultsError", "read_pretraining", "read_results"]
