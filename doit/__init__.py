"""doit: instruction-tuning scaling studies."""
__version__ = "0.1.0"
