"""The study runner: a scaling grid (`recipes/grids/*.yaml`) planned into cells, run resumably,
and gathered into one results table (`read_results`, the analysis's input). See README.md."""

from doit.grid.results import ResultsError, read_results

__all__ = ["ResultsError", "read_results"]
