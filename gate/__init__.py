"""casegate: a regression gate for model-backed features."""

__version__ = "0.1.0"
