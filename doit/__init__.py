"""doit: instruction-tuning scaling studies, ability by ability.

Subpackages: ``doit.data`` (corpus model), ``doit.models`` (ResFormer/SVFormer),
``doit.train`` (SFT), ``doit.eval`` (scoring). ``doit.models`` is imported lazily
(``doit.models`` or ``import doit.models``): it registers ``model_type: resformer``
with the transformers Auto classes, and data-only users never pay for torch.
"""

import importlib

__version__ = "0.1.0"


def __getattr__(name: str):
    if name in ("data", "models", "train", "eval"):
        return importlib.import_module(f"doit.{name}")
    raise AttributeError(f"module 'doit' has no attribute {name!r}")
