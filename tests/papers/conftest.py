"""Fixtures of the paper tests: the analysis tests' hand-made metrics rows (``mr``)."""

from ..analysis.conftest import mr  # noqa: F401
