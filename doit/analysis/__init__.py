"""The study's analysis: checkpoint selection, binomial scaling fits with a paired bootstrap,
sensitivities and groups, Complexity and Transference, predictions, figures and a report
(``python -m doit.analysis run STUDY --out DIR``; definitions in README.md); a pretraining
ladder's loss against size (``ladder``), the micro world's targets (``targets``) and planted
studies for testing (``synthetic``)."""

from doit.analysis.select import SELECTION_RULES, select_checkpoints

__all__ = ["SELECTION_RULES", "select_checkpoints"]
