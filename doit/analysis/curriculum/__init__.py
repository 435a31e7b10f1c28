"""Curriculum selection per ability: from a study's fitted curves to a mix that ``doit sft``
trains on, with predicted gains over uniform (and their CIs) before anything is trained, and
an optional validation run against uniform at an equal budget.

    doit analysis curriculum STUDY --budget N --policy P[,P...|all] --out DIR [--validate]

Library: ``make(source, Options(...)) -> Result`` (`core`), ``write(result, DIR)``
(`outputs`), ``validate.run(result, DIR, ...)`` (`validate`). Modules: `options` (the request,
the one error), `evidence` (what the policies read), `model` (S_a with the transfer term),
`optimise` (the exact integer allocation), `policies`, `regression` (RegMix), `core`,
`outputs`, `validate`. Definitions: doit/analysis/README.md, "Curriculum".
"""

from doit.analysis.curriculum.core import Result, make
from doit.analysis.curriculum.options import CurriculumError, Options
from doit.analysis.curriculum.outputs import write

__all__ = ["CurriculumError", "Options", "Result", "make", "write"]
