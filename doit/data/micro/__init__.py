"""The SYNTHETIC micro DoIT corpus generator (see README.md beside this file).

from doit.data.micro import build_micro, write_corpus
"""

from doit.data.micro.build import build_micro
from doit.data.micro.corpus import write_corpus

__all__ = ["build_micro", "write_corpus"]
