"""The version of skboost (model files record it)."""

__version__ = "0.1.0.dev0"
