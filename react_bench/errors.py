"""The project's own error types that cross module boundaries.

``ConfigError``: a setting that cannot work (unknown model, missing key variable, a value out
of range). The entry point prints it as one line and exits with code 2; it never becomes a
wrong answer. Tasks, wiki, models and the run configuration all raise it, so it lives
here rather than in any one of them.
"""

from __future__ import annotations


class ConfigError(ValueError):
    """A setting that cannot work (missing key variable, unknown model, missing extra)."""
