"""The SYNTHETIC micro DoIT corpus generator (see README.md beside this file).

from doit.data.micro import build_micro
"""

from doit.data.micro.build import build_micro

__all__ = ["build_micro"]
