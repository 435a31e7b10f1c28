"""doit: instruction-tuning scaling studies, ability by ability.

Subpackages, in the order data flows through them: ``doit.data`` (the corpus: abilities, answer
kinds, validation, subsets, mixes, the micro world), ``doit.models`` (ResFormer/SVFormer, the chat
format, the one model loader), ``doit.train`` (fine-tuning and pretraining), ``doit.eval``
(prediction and scoring), ``doit.grid`` (a whole study: plan, run, results table) and
``doit.analysis`` (fits, sensitivities, features, predictions, report). ``doit.io`` is the
project's file I/O; ``doit.testing`` builds tiny tokenizers, models and bases in-process for the
tests and benches. Subpackages are imported lazily (``doit.models`` registers ``model_type:
resformer`` with the transformers Auto classes; data-only users never pay for torch).
"""

import importlib

__version__ = "0.1.0"


def __getattr__(name: str):
    if name in ("data", "models", "train", "eval", "grid", "analysis", "io"):
        return importlib.import_module(f"doit.{name}")
    raise AttributeError(f"module 'doit' has no attribute {name!r}")
